/** The disk check: a download that would not fit on the model volume, with a reserve kept free, fails first. */
import { statfs } from 'node:fs/promises';
import { permanentError } from '../core/errors';
import { showBytes } from '../core/show-bytes';

/** Fails (`no-space`) when `bytes` more would not fit on the volume of `dir`; settles otherwise. */
export type SpaceCheck = (dir: string, bytes: number, what: string) => Promise<void>;

/** `statfs(path)`: the blocks available to unprivileged users (root's reserve does not count) times their size. */
export const statfsFreeBytes = async (path: string): Promise<number> => {
  const { bavail, bsize } = await statfs(path);
  return bavail * bsize;
};

/** How the check is called: the reserve's name in its failure (the CLI's flag; default `minFreeBytes`), statfs. */
export interface SpaceCheckOptions {
  readonly reserveName?: string;
  readonly freeBytesOf?: typeof statfsFreeBytes;
}

/**
 * The check of the reserve: `bytes` (a declared size; 0 when unknown) plus `minFreeBytes` must be free on
 * the volume of `dir`. The failure is permanent: it is found before a byte is written, space seldom frees itself
 * within a retry's backoff, and the resync retries a Failed model on its own, capped, schedule. A statfs that
 * fails (a file system without it) lets the download go on: the write itself still fails on a full disk.
 */
export const spaceCheck =
  (
    minFreeBytes: number,
    { reserveName = 'minFreeBytes', freeBytesOf = statfsFreeBytes }: SpaceCheckOptions = {},
  ): SpaceCheck =>
  async (dir, bytes, what) => {
    const free = await freeBytesOf(dir).catch(() => undefined);
    if (free === undefined || bytes + minFreeBytes <= free) return;
    const needs = bytes > 0 ? `${showBytes(bytes)} + ` : '';
    throw permanentError(
      'no-space',
      `${what}: does not fit on the model volume: needs ${needs}${showBytes(minFreeBytes)} kept free ` +
        `(${reserveName}), ${showBytes(free)} free`,
    );
  };
