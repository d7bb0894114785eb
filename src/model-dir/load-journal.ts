/** loadJournal: the LoadJournal port as one append-only file, `<model dir>/.modelsync-journal`, never opened through a link. */
import type { Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { permanentError } from '../core/errors';
import { journalRecord, readJournalRecords, type JournalEvent } from '../core/journal-records';
import { modelNameProblem, type ModelName } from '../core/model-name';
import type { LoadJournal } from '../ports';
import { step, entryKind, removeTree } from '../fs';
import {
  legacyJournalDirName,
  openJournalFile,
  openJournalReadOnly,
  readJournalText,
  readLegacyJournalDir,
  writeJournalFile,
  type JournalFile,
} from './journal-file';
import type { Logger } from '../log';
/** The journal file inside the model dir; its leading dot keeps it apart from every model name. */
export const loadJournalFileName = '.modelsync-journal';

// Past this size the file is rewritten with only the loads still unconfirmed.
const compactAboveBytes = 1024 * 1024;
const defaultIdleCloseMs = 1000;

/**
 * The load journal of the model dir `root` (one agent per model dir). `starting` and `confirmed` append a record,
 * never flushed: a killed process or restarted container loses nothing the page cache holds, and a power loss
 * restarts the model server too, so no load it reports survives to be confirmed (losing a `confirmed` costs one
 * redundant reload). The first use reads the file
 * (a torn last line and bad lines are skipped), migrates the 0.1 journal dir and forgets models whose dir is
 * gone. Whatever sits at the journal's path that modelsync did not write (a link, a dir, a FIFO, a file with
 * other hard links) is logged and replaced, never followed; a journal swapped or deleted meanwhile is written anew.
 */
export const loadJournal = (options: {
  readonly root: string;
  readonly log?: Logger;
  /** How long the file stays open after the last change (default 1 s): a burst of loads opens it once. */
  readonly idleCloseMs?: number;
}): LoadJournal => {
  const idleCloseMs = options.idleCloseMs ?? defaultIdleCloseMs;
  const root = resolve(options.root);
  const path = join(root, loadJournalFileName);
  const log = (options.log ?? pino({ level: 'silent' })).child({ component: 'load-journal' });
  const pending = new Set<ModelName>();
  let file: JournalFile | undefined;
  // The journal file as this process last left it: anything else at the path means someone replaced it.
  let known: Stats | undefined;
  let tornTail = false;
  let loaded: Promise<void> | undefined;

  // Changes run one at a time, in call order: a record is never interleaved with another or with a compaction.
  // The file stays open during a burst of loads and is closed `idleCloseMs` after the last change: no descriptor
  // is held while idle, and the journal's path is checked again (O_NOFOLLOW, same file as left) at the next burst.
  let queue: Promise<unknown> = Promise.resolve();
  let queued = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  const closeWhenIdle = (): void => {
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      queue = queue.then(() => (queued === 0 ? closeFile() : undefined));
    }, idleCloseMs);
    idleTimer.unref();
  };
  const inOrder = <T>(change: () => Promise<T>): Promise<T> => {
    queued++;
    clearTimeout(idleTimer);
    idleTimer = undefined;
    const result = queue.then(change).finally(() => {
      if (--queued === 0) closeWhenIdle();
    });
    queue = result.catch(() => undefined);
    return result;
  };

  const checkName = (name: ModelName): void => {
    const problem = modelNameProblem(name);
    if (problem !== undefined) {
      throw permanentError('refused', `refusing journal record for ${JSON.stringify(name)}: ${problem}`);
    }
  };

  const closeFile = async (): Promise<void> => {
    const open = file;
    file = undefined;
    if (open === undefined) return;
    known = await open.handle.stat().catch(() => known);
    await open.handle.close().catch(() => undefined);
  };

  /** True when `found` is the journal file as we left it (inode numbers alone are reused once a file is deleted). */
  const asLeft = (found: Stats): boolean =>
    known === undefined ||
    (found.dev === known.dev &&
      found.ino === known.ino &&
      found.size === known.size &&
      found.mtimeMs === known.mtimeMs);

  /** Rewrites the journal with only the pending loads. */
  const compact = async (): Promise<JournalFile> => {
    const text = [...pending].map((name) => journalRecord('starting', name)).join('');
    const written = await writeJournalFile(path, text, log);
    await closeFile();
    known = written.stats;
    tornTail = false;
    file = written;
    return written;
  };

  /** Rewrites the journal because what is at its path is not the file this process left there. */
  const rewrite = (found: string): Promise<JournalFile> => {
    log.warn({ path, found }, 'the load journal was replaced or removed by someone else; writing it anew');
    return compact();
  };

  /** The journal file, open, checked to be the one this process left at the path; written anew when it is not. */
  const writable = async (): Promise<JournalFile> => {
    if (file !== undefined) {
      const now = await lstat(path).catch(() => undefined);
      const held = file;
      if (now?.isFile() && now.dev === held.stats.dev && now.ino === held.stats.ino) {
        // Our file, but linked elsewhere too or written by someone else meanwhile: not ours alone any more.
        if (now.nlink === 1 && now.size === held.size) return held;
        await closeFile();
        return rewrite(now.nlink === 1 ? 'the file changed by someone else' : 'a file with other hard links');
      }
      await closeFile();
      return rewrite(now === undefined ? 'nothing' : now.isFile() ? 'another file' : entryKind(now));
    }
    const info = await lstat(path).catch(() => undefined);
    if (info?.isFile() && info.nlink === 1 && asLeft(info)) {
      const opened = await openJournalFile(path, log);
      if (opened.stats.ino === info.ino && opened.stats.dev === info.dev) {
        file = opened;
        known = opened.stats;
        return file;
      }
      await opened.handle.close();
    }
    if (info === undefined) return known === undefined ? compact() : rewrite('nothing');
    return rewrite(info.isFile() ? 'another file' : entryKind(info));
  };

  const record = async (event: JournalEvent, name: ModelName): Promise<void> => {
    const target = await writable();
    const text = (tornTail ? '\n' : '') + journalRecord(event, name);
    // Until the write completes, a failure may have left part of a line: the next record starts a new one.
    tornTail = true;
    // A failed write may have left part of the line: the file is closed, and checked again when next opened.
    await target.handle.writeFile(text).catch(async (cause: unknown) => {
      await closeFile();
      throw cause;
    });
    tornTail = false;
    target.size += Buffer.byteLength(text);
    if (event === 'starting') pending.add(name);
    else pending.delete(name);
    if (target.size > compactAboveBytes) await compact();
  };

  /** Adds the records of `found` to the pending loads; true when they were all read cleanly. */
  const readRecords = async (found: JournalFile): Promise<boolean> => {
    const text = await readJournalText(found, path, log);
    if (text === undefined) return false;
    const content = readJournalRecords(text);
    for (const name of content.unconfirmed) pending.add(name);
    if (content.badLines > 0) {
      log.warn({ path, badLines: content.badLines }, 'skipping load journal lines that are no record');
    }
    return !content.tornTail;
  };

  /** Reads the journal file as found, keeping it open for appending, or rewrites it when it is not fit to be. */
  const readFound = async (): Promise<void> => {
    let found: JournalFile;
    try {
      found = await openJournalFile(path, log);
    } catch (err) {
      log.warn({ err, path }, 'cannot open the load journal for writing; loads fail until it can be');
      // Still read it: a read-only model dir must not lose the loads its journal holds.
      const readOnly = await openJournalReadOnly(path);
      if (readOnly !== undefined) await readRecords(readOnly).finally(() => readOnly.handle.close());
      return;
    }
    // A torn last line (a crash mid-append) is dropped by a rewrite rather than left to become a bad line.
    const clean = await readRecords(found).catch(async (cause: unknown) => {
      await found.handle.close();
      throw cause;
    });
    file = found;
    known = found.stats;
    if (found.stats.nlink > 1) {
      await rewrite('a file with other hard links');
    } else if (!clean || found.size > compactAboveBytes) await compact();
  };

  const hasModelDir = (name: ModelName): Promise<boolean> =>
    lstat(join(root, name)).then(
      (info) => info.isDirectory(),
      () => false,
    );

  const init = async (): Promise<void> => {
    const legacy = await readLegacyJournalDir(root, log).catch((err: unknown) => {
      log.warn({ err }, 'cannot read the 0.1 load journal dir; ignoring it');
      return [];
    });
    await readFound();
    for (const name of legacy) {
      if (pending.has(name)) continue;
      if (file === undefined) pending.add(name);
      else await record('starting', name);
    }
    // Only once its loads are in the journal file: a crash before this reads the dir again.
    if (file !== undefined) await removeTree(join(root, legacyJournalDirName));
    // A record without a model dir (a crash between deleting a model and confirming it) means nothing any more.
    for (const name of [...pending]) {
      if (await hasModelDir(name)) continue;
      if (file === undefined) pending.delete(name);
      else await record('confirmed', name);
    }
  };

  /** Reads the journal once, before the first change or question; never fails (a warn says what was skipped). */
  const ready = (): Promise<void> =>
    (loaded ??= init().catch((err: unknown) => log.warn({ err, path }, 'cannot recover the load journal')));

  const change = (name: ModelName, run: () => Promise<void>): Promise<void> => {
    checkName(name);
    return inOrder(() =>
      step(`cannot record the load of ${name}`, async () => {
        await ready();
        await run();
      }),
    );
  };

  return {
    // async, so a refused name rejects like every other failure instead of throwing at the call.
    starting: async (name) => change(name, () => record('starting', name)),
    confirmed: async (name) =>
      change(name, () => (pending.has(name) ? record('confirmed', name) : Promise.resolve())),
    unconfirmed: () =>
      inOrder(async () => {
        await ready();
        return new Set(pending);
      }),
  };
};
