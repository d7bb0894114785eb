/**
 * sourceWatches: a copy from a volume that stops answering (a hung NFS claim, `pvc://` on it) fails with kind
 * `timeout` naming the volume, and the copies from it after that at once, instead of holding a download slot (and
 * one of libuv's threads) for good.
 */
import path from 'node:path';
import { mountWatch, mountWatches, type MountCheck, type MountWatch, type MountWatchLog } from '../../fs';
import { isInside } from './local-roots';

/** Runs `copy` from `source` under the watch of its volume, with a signal that also ends when the watch gives up. */
export type WatchedCopy = (
  source: string,
  signal: AbortSignal,
  copy: (signal: AbortSignal) => Promise<void>,
) => Promise<void>;

const quiet: MountWatchLog = { error: () => undefined, warn: () => undefined };

/**
 * Each copy runs under the `mountWatch` of the most specific of `roots` its source lies in, one a root for the
 * process; `/` (any path allowed) is no volume: such a copy gets a watch of its source of its own. The copy's signal
 * is aborted when the watch gives up, so that what the hung call brings back late stops there.
 */
export const sourceWatches = (
  roots: ReadonlyArray<string>,
  log: MountWatchLog = quiet,
  check: MountCheck = {},
): WatchedCopy => {
  const options = { log, what: 'the source volume', ...check };
  const kept = mountWatches(options);
  const watchOf = (source: string): MountWatch => {
    const root = roots
      .filter((candidate) => path.dirname(candidate) !== candidate && isInside(candidate, source))
      .sort((a, b) => b.length - a.length)[0];
    return root === undefined ? mountWatch({ ...options, root: source }) : kept(root);
  };
  return async (source, signal, copy) => {
    const stop = new AbortController();
    try {
      await watchOf(source)(() => copy(AbortSignal.any([signal, stop.signal])));
    } catch (cause) {
      stop.abort(cause);
      throw cause;
    }
  };
};
