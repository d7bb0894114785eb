/** loadJournal: the LoadJournal port as one append-only file, `<model dir>/.modelsync-journal`, never opened through a link. */
import { lstat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { permanentError } from '../core/errors';
import { readJournalRecords, type JournalEvent } from '../core/journal-records';
import { modelNameProblem, type ModelName } from '../core/model-name';
import type { LoadJournal } from '../ports';
import { step, removeTree } from '../fs';
import {
  legacyJournalDirName,
  openJournalFile,
  openJournalReadOnly,
  readJournalText,
  readLegacyJournalDir,
  type JournalFile,
} from './journal-file';
import { compactAboveBytes, JournalWriter } from './journal-writer';
import type { Logger } from '../log';
/** The journal file inside the model dir; its leading dot keeps it apart from every model name. */
export const loadJournalFileName = '.modelsync-journal';

const defaultIdleCloseMs = 1000;

/**
 * Changes run one at a time, in call order: a record is never interleaved with another or with a compaction.
 * The file stays open during a burst of loads and `close`s `idleCloseMs` after the last change: no descriptor is
 * held while idle, and the journal's path is checked again (O_NOFOLLOW, same file as left) at the next burst.
 */
const inOrderClosingWhenIdle = (
  idleCloseMs: number,
  close: () => Promise<void>,
): (<T>(change: () => Promise<T>) => Promise<T>) => {
  let queue: Promise<unknown> = Promise.resolve();
  let queued = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  const closeWhenIdle = (): void => {
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      queue = queue.then(() => (queued === 0 ? close() : undefined));
    }, idleCloseMs);
    idleTimer.unref();
  };
  return <T>(change: () => Promise<T>): Promise<T> => {
    queued++;
    clearTimeout(idleTimer);
    idleTimer = undefined;
    const result = queue.then(change).finally(() => {
      if (--queued === 0) closeWhenIdle();
    });
    queue = result.catch(() => undefined);
    return result;
  };
};

/** Adds the records of `found` to the pending loads; true when they were all read cleanly. */
const readRecords = async (journal: JournalWriter, found: JournalFile): Promise<boolean> => {
  const { path, log } = journal;
  const text = await readJournalText(found, path, log);
  if (text === undefined) return false;
  const content = readJournalRecords(text);
  for (const name of content.unconfirmed) journal.pending.add(name);
  if (content.badLines > 0) {
    log.warn({ path, badLines: content.badLines }, 'skipping load journal lines that are no record');
  }
  return !content.tornTail;
};

/** Reads the journal file as found, keeping it open for appending, or rewrites it when it is not fit to be. */
const readFound = async (journal: JournalWriter): Promise<void> => {
  const { path, log } = journal;
  let found: JournalFile;
  try {
    found = await openJournalFile(path, log);
  } catch (err) {
    log.warn({ err, path }, 'cannot open the load journal for writing; loads fail until it can be');
    // Still read it: a read-only model dir must not lose the loads its journal holds.
    const readOnly = await openJournalReadOnly(path);
    if (readOnly !== undefined) await readRecords(journal, readOnly).finally(() => readOnly.handle.close());
    return;
  }
  // A torn last line (a crash mid-append) is dropped by a rewrite rather than left to become a bad line.
  const clean = await readRecords(journal, found).catch(async (cause: unknown) => {
    await found.handle.close();
    throw cause;
  });
  journal.adopt(found);
  if (found.stats.nlink > 1) {
    await journal.rewrite('a file with other hard links');
  } else if (!clean || found.size > compactAboveBytes) await journal.compact();
};

/** Reads the journal at start-up: its file, the 0.1 journal dir, and no record of a model whose dir is gone. */
const recoverJournal = async (journal: JournalWriter, root: string): Promise<void> => {
  const { log, pending } = journal;
  const legacy = await readLegacyJournalDir(root, log).catch((err: unknown) => {
    log.warn({ err }, 'cannot read the 0.1 load journal dir; ignoring it');
    return [];
  });
  await readFound(journal);
  for (const name of legacy) {
    if (pending.has(name)) continue;
    if (!journal.isOpen) pending.add(name);
    else await journal.appendAll([{ event: 'starting', name }]);
  }
  // Only once its loads are in the journal file: a crash before this reads the dir again.
  if (journal.isOpen) await removeTree(join(root, legacyJournalDirName));
  // A record without a model dir (a crash between deleting a model and confirming it) means nothing any more.
  for (const name of [...pending]) {
    if ((await lstat(join(root, name)).catch(() => undefined))?.isDirectory()) continue;
    if (!journal.isOpen) pending.delete(name);
    else await journal.appendAll([{ event: 'confirmed', name }]);
  }
};

/** A record waiting for the write of its batch. */
interface WaitingRecord {
  readonly event: JournalEvent;
  readonly name: ModelName;
  readonly done: () => void;
  readonly failed: (cause: unknown) => void;
}

export const loadJournal = (options: {
  readonly root: string;
  readonly log?: Logger;
  /** How long the file stays open after the last change (default 1 s): a burst of loads opens it once. */
  readonly idleCloseMs?: number;
}): LoadJournal => {
  const root = resolve(options.root);
  const log = (options.log ?? pino({ level: 'silent' })).child({ component: 'load-journal' });
  const journal = new JournalWriter(join(root, loadJournalFileName), log);
  const inOrder = inOrderClosingWhenIdle(options.idleCloseMs ?? defaultIdleCloseMs, () => journal.close());
  let loaded: Promise<void> | undefined;

  /** Reads the journal once, before the first change or question; never fails (a warn says what was skipped). */
  const ready = (): Promise<void> =>
    (loaded ??= recoverJournal(journal, root).catch((err: unknown) =>
      log.warn({ err, path: journal.path }, 'cannot recover the load journal'),
    ));

  // Group commit: the records asked for while a write is under way go out together in the next one, each settled
  // by the write that carried it.
  let batch: WaitingRecord[] = [];
  const writeBatch = async (): Promise<void> => {
    const records = batch;
    batch = [];
    try {
      await ready();
      await journal.appendAll(records);
      for (const record of records) record.done();
    } catch (cause) {
      for (const record of records) record.failed(cause);
    }
  };
  const change = (event: JournalEvent, name: ModelName): Promise<void> => {
    const problem = modelNameProblem(name);
    if (problem !== undefined) {
      throw permanentError('refused', `refusing journal record for ${JSON.stringify(name)}: ${problem}`);
    }
    const written = new Promise<void>((done, failed) => {
      if (batch.length === 0) void inOrder(writeBatch);
      batch.push({ event, name, done, failed });
    });
    return step(`cannot record the load of ${name}`, () => written);
  };

  return {
    // async, so a refused name rejects like every other failure instead of throwing at the call.
    starting: async (name) => change('starting', name),
    // Left out when no load of it is pending by the time its batch is written (see appendAll).
    confirmed: async (name) => change('confirmed', name),
    unconfirmed: () =>
      inOrder(async () => {
        await ready();
        return new Set(journal.pending);
      }),
  };
};
