/** loadJournal: the LoadJournal port as one append-only file, `<model dir>/.modelsync-journal`, never opened through a link. */
import { join, resolve } from 'node:path';
import pino from 'pino';
import { permanentError, retryableError } from '../core/errors';
import type { JournalEvent } from '../core/journal-records';
import { modelNameProblem, type ModelName } from '../core/model-name';
import { within } from '../core/waits';
import type { LoadJournal } from '../ports';
import { fsError, isNoSpace, step } from '../fs';
import { JournalWriter } from './journal-writer';
import type { Logger } from '../log';
/** The journal file inside the model dir; its leading dot keeps it apart from every model name. */
export const loadJournalFileName = '.modelsync-journal';

const defaultIdleCloseMs = 1000;
// A record is one short line; a write that has not returned in this long is on a file system that hangs.
const defaultWriteTimeoutMs = 30_000;

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
  /**
   * How long a record may wait for its write, and the start-up for the journal's read (default 30 s): past it, they
   * fail retryably (a hung mount).
   */
  readonly writeTimeoutMs?: number;
}): LoadJournal => {
  const writeTimeoutMs = options.writeTimeoutMs ?? defaultWriteTimeoutMs;
  const root = resolve(options.root);
  const log = (options.log ?? pino({ level: 'silent' })).child({ component: 'load-journal' });
  const journal = new JournalWriter(join(root, loadJournalFileName), log);
  const inOrder = inOrderClosingWhenIdle(options.idleCloseMs ?? defaultIdleCloseMs, () => journal.close());
  let loaded: Promise<void> | undefined;

  /**
   * Reads the journal once, before the first change or question. A transient failure (EMFILE, EIO) fails retryably
   * and the next call reads it again: nothing is appended before it is read, so no compaction drops records it did
   * not read. Any other failure is a warn saying what was skipped.
   */
  const ready = (): Promise<void> =>
    (loaded ??= journal.recover(root).catch(async (err: unknown) => {
      const failure = fsError(`cannot read the load journal ${journal.path}`, err);
      // A full disk (a migration's write) is not waited for: the start goes on, as on a read-only volume.
      if (failure.kind !== 'filesystem' || !failure.retryable || isNoSpace(err)) {
        log.warn({ err, path: journal.path }, 'cannot recover the load journal');
        return;
      }
      loaded = undefined;
      await journal.close();
      throw failure;
    }));

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
    if (problem !== undefined)
      throw permanentError('refused', `refusing journal record for ${JSON.stringify(name)}: ${problem}`);
    let waiting: WaitingRecord | undefined;
    const written = new Promise<void>((done, failed) => {
      if (batch.length === 0) void inOrder(writeBatch);
      batch.push((waiting = { event, name, done, failed }));
    });
    // A write on a hung mount never returns, and the caller holds a load or download slot meanwhile: it gives up
    // at the deadline and the slot is freed. The write under way stays the only one (the next waits behind it), and
    // a record not taken by a write yet leaves the batch: nothing piles up while the mount hangs.
    return within(
      step(`cannot record the load of ${name}`, () => written),
      writeTimeoutMs,
      () => {
        batch = batch.filter((record) => record !== waiting);
        throw retryableError(
          'timeout',
          `cannot record the load of ${name} in the load journal ${journal.path}: no answer from the file ` +
            `system within ${writeTimeoutMs} ms (a hung model dir mount?); tried again`,
        );
      },
    );
  };

  return {
    // async, so a refused name rejects like every other failure instead of throwing at the call.
    starting: async (name) => change('starting', name),
    // Left out when no load of it is pending by the time its batch is written (see appendAll).
    confirmed: async (name) => change('confirmed', name),
    // Read at start-up, which tries again while the model dir does not answer: each try waits behind the read
    // under way, none starts another.
    unconfirmed: () =>
      within(
        inOrder(async () => {
          await ready();
          return new Set(journal.pending);
        }),
        writeTimeoutMs,
        () => {
          throw retryableError(
            'timeout',
            `cannot read the load journal ${journal.path}: no answer from the file system within ` +
              `${writeTimeoutMs} ms (a hung model dir mount?)`,
          );
        },
      ),
  };
};
