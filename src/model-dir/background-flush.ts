/** backgroundFlusher: flushes installed model dirs off the load's path, in batches once the installs pause. */
import type { Stats } from 'node:fs';
import { forEachLimited, syncPath, isSameEntry, syncListed, withDir } from '../fs';
import { EffectError, errorCode } from '../core/errors';
import type { Logger } from '../log';
// Dirs flushed at once: enough to overlap fsync latency, few enough to leave libuv's pool (4 threads) to the installs.
const flushConcurrency = 2;

/**
 * Flushes the `files` the install wrote in `target` (relative paths: its manifest and marker) and their dirs; `soon`:
 * someone waits for it (a replaced version is deleted only then), so its batch goes now.
 */
export type FlushInstalled = (
  target: string,
  installed: Stats,
  files: ReadonlyArray<string>,
  soon?: boolean,
) => Promise<void>;

/**
 * A batch is flushed once no install came for `quietMs`, at the latest `maxDelayMs` after its first: each dir
 * flushed as installed cost CPU and pool threads (docs/architecture.md, Durability).
 */
const defaultPacing = { quietMs: 250, maxDelayMs: 2000 };

interface Waiting {
  readonly target: string;
  readonly installed: Stats;
  readonly files: ReadonlyArray<string>;
  readonly done: () => void;
}

/** What removing a model dir meanwhile makes a flush fail with: no failure, nothing is left to flush. */
const isGone = (err: unknown): boolean =>
  errorCode(err instanceof EffectError ? err.cause : err) === 'ENOENT';

/**
 * fsyncs an installed model dir's files and dirs in one batch with every dir installed until the installs pause,
 * then `root` once (docs/architecture.md, Durability); never fails (a warn says what was not flushed). The dir is
 * opened again by path, no link followed; one gone or replaced since its install (`installed`: its stats) is skipped.
 */
export const backgroundFlusher = (
  root: string,
  log: Logger,
  { quietMs, maxDelayMs }: typeof defaultPacing = defaultPacing,
): FlushInstalled => {
  let waiting: Waiting[] = [];
  let firstAt = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const flushOne = async ({ target, installed, files }: Waiting): Promise<void> => {
    try {
      if (!(await isSameEntry(target, installed))) return;
      // Only what the install wrote: the model server may have planted a tree since (deeper than the descriptor
      // limit, millions of files) that a walk would hold open or take minutes over.
      await withDir(target, (dir) => syncListed(dir, files));
    } catch (err) {
      // Removed while it was flushed (its agent stopped, its dir removed), as the root below: nothing left to keep.
      if (isGone(err)) return;
      log.warn({ err, dir: target }, 'cannot flush an installed model dir; recovery checks it after a crash');
    }
  };
  const flushBatch = async (batch: ReadonlyArray<Waiting>): Promise<void> => {
    await forEachLimited(batch, flushConcurrency, flushOne);
    await syncPath(root).catch((err: unknown) => {
      // The model dir itself is gone (an agent stopped and its dir removed, as tests and integrators do): there
      // is nothing left whose durability matters.
      if (isGone(err)) return;
      log.warn({ err, dir: root }, 'cannot flush the model dir; recovery checks it after a crash');
    });
    for (const dir of batch) dir.done();
  };
  const flushWaiting = (): void => {
    timer = undefined;
    const batch = waiting;
    waiting = [];
    // One batch at a time: the next waits for this one's root fsync.
    running = running.then(() => flushBatch(batch));
  };
  const schedule = (soon: boolean): void => {
    clearTimeout(timer);
    const delay = soon ? 0 : Math.min(quietMs, Math.max(0, firstAt + maxDelayMs - performance.now()));
    // Not holding the process: what is not flushed at exit is in the page cache, and recovery checks it.
    timer = setTimeout(flushWaiting, delay).unref();
  };
  return (target, installed, files, soon = false) =>
    new Promise<void>((done) => {
      if (waiting.length === 0) firstAt = performance.now();
      waiting.push({ target, installed, files, done });
      schedule(soon);
    });
};
