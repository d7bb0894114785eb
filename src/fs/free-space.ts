/** The disk check: a download that would not fit on the model volume, with a reserve kept free, fails first. */
import { permanentError } from '../core/errors';
import { showBytes } from '../core/show-bytes';
import { quick } from './quick-calls';

/** Fails (`no-space`) when `bytes` more would not fit on the volume of `dir`; settles otherwise. */
export type SpaceCheck = (dir: string, bytes: number, what: string) => Promise<void>;

/**
 * `statfs(path)`: the blocks available to unprivileged users (root's reserve does not count) times their size.
 * Inline on a local model volume (quick): it is on an install's path, before the staging dir is settled.
 */
export const statfsFreeBytes = async (path: string): Promise<number> => {
  const { bavail, bsize } = await quick.statfs(path);
  return bavail * bsize;
};

/** How the check is called: the reserve's name in its failure (the CLI's flag; default `minFreeBytes`), statfs. */
export interface SpaceCheckOptions {
  readonly reserveName?: string;
  readonly freeBytesOf?: typeof statfsFreeBytes;
  /** How long one reading of the free bytes serves every check (default 100 ms; 0: each check reads). */
  readonly reuseMs?: number;
  readonly now?: () => number;
}

// A burst of 1,000 small models asked statfs twice each (the stage, then the download's declared size): 2,000 round
// trips through libuv's pool on the path to the loads. One check instance serves one volume (the model dir's or the
// initializer's dest), so a reading taken a moment ago answers as well: the bytes written since are bounded by the
// disk's speed over `reuseMs`, and the write itself still fails on a full disk.
const defaultReuseMs = 100;

/**
 * The check of the reserve: `bytes` (a declared size; 0 when unknown) plus `minFreeBytes` must be free on
 * the volume of `dir`. The failure is permanent: it is found before a byte is written, space seldom frees itself
 * within a retry's backoff, and the resync retries a Failed model on its own, capped, schedule. A statfs that
 * fails (a file system without it) lets the download go on: the write itself still fails on a full disk. The checks
 * of one instance share a reading for `reuseMs` (one volume: see `defaultReuseMs`).
 */
export const spaceCheck = (
  minFreeBytes: number,
  {
    reserveName = 'minFreeBytes',
    freeBytesOf = statfsFreeBytes,
    reuseMs = defaultReuseMs,
    now = performance.now.bind(performance),
  }: SpaceCheckOptions = {},
): SpaceCheck => {
  let reading: { readonly at: number; readonly free: Promise<number | undefined> } | undefined;
  return async (dir, bytes, what) => {
    if (reading === undefined || now() - reading.at >= reuseMs)
      reading = { at: now(), free: freeBytesOf(dir).catch(() => undefined) };
    const free = await reading.free;
    if (free === undefined || bytes + minFreeBytes <= free) return;
    const needs = bytes > 0 ? `${showBytes(bytes)} + ` : '';
    throw permanentError(
      'no-space',
      `${what}: does not fit on the model volume: needs ${needs}${showBytes(minFreeBytes)} kept free ` +
        `(${reserveName}), ${showBytes(free)} free`,
    );
  };
};
