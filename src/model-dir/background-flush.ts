/** backgroundFlusher: flushes installed model dirs off the load's path, a few at a time. */
import type { Stats } from 'node:fs';
import { groupCommit } from '../core/group-commit';
import { createSlots } from '../core/slots';
import { syncPath, isSameEntry, syncTree, withDir } from '../fs';
import type { Logger } from '../log';
// Flushes at once: enough to overlap fsync latency, few enough to leave the disk to the downloads.
const flushConcurrency = 4;

export type FlushInstalled = (target: string, installed: Stats) => Promise<void>;

/**
 * Given an installed model dir (its path and the stats it was installed with), fsyncs its files and dirs, then
 * `root`'s entry for it; never fails (a warn says what was not flushed). It may wait: a killed process loses
 * nothing the page cache holds, and after a power loss recovery checks every model's files against its marker.
 * The dir is opened again by path, no link followed; one gone or replaced meanwhile is skipped.
 */
export const backgroundFlusher = (root: string, log: Logger): FlushInstalled => {
  const slots = createSlots(flushConcurrency);
  // Every flush ends with an fsync of the root: flushes finishing together share one.
  const syncRoot = groupCommit(() => syncPath(root));
  return (target, installed) =>
    // No signal: a flush waits for its slot however long it takes.
    slots.use(undefined, async () => {
      try {
        if (!(await isSameEntry(target, installed))) return;
        await withDir(target, syncTree);
        await syncRoot();
      } catch (err) {
        log.warn(
          { err, dir: target },
          'cannot flush an installed model dir; recovery checks it after a crash',
        );
      }
    });
};
