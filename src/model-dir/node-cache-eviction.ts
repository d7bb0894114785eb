/** Eviction from the node cache, least recently used entries first (docs/operating.md, The node cache, Eviction). */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../core/errors';
import { fileStats, lockFile, removeTree, statfsFreeBytes, withDir } from '../fs';
import type { Logger } from '../log';

/** The budgets of a node cache: 0 turns one off. */
export interface EvictionBudget {
  /** The most bytes its entries may hold together (`--node-cache-max-bytes`). */
  readonly maxBytes: number;
  /** The least its file system must keep free (`--node-cache-min-free-bytes`). */
  readonly minFreeBytes: number;
}

/** An entry's name: the sha256 of an identity, in hex. */
const entryName = /^[0-9a-f]{64}$/;

interface EntryUse {
  readonly name: string;
  readonly bytes: number;
  /** When it was last filled from or published (its dir's mtime, touched at each use). */
  readonly usedAt: number;
  /** A file of it is linked from elsewhere too: a model dir on this file system holds it. */
  readonly linked: boolean;
}

const useOf = async (root: string, name: string): Promise<EntryUse | undefined> => {
  const path = join(root, name);
  const info = await lstat(path);
  if (!info.isDirectory()) return undefined; // not an entry we made: left to the fill's checks
  const files = [...(await withDir(path, fileStats)).values()];
  return {
    name,
    usedAt: info.mtimeMs,
    bytes: files.reduce((sum, file) => sum + file.size, 0),
    linked: files.some((file) => file.nlink > 1),
  };
};

/** Evicts from the node cache at `root` until `budget` holds or nothing more may go; returns the names evicted. */
export const evictNodeCache = async (
  root: string,
  budget: EvictionBudget,
  log: Logger,
  freeBytesOf: (path: string) => Promise<number> = statfsFreeBytes,
): Promise<string[]> => {
  if (budget.maxBytes === 0 && budget.minFreeBytes === 0) return [];
  const uses: EntryUse[] = [];
  for (const name of await readdir(root)) {
    if (!entryName.test(name)) continue;
    // An entry removed meanwhile by another process's sweep is simply gone.
    const use = await useOf(root, name).catch((cause: unknown) => {
      if (errorCode(cause) === 'ENOENT') return undefined;
      throw cause;
    });
    if (use !== undefined) uses.push(use);
  }
  let total = uses.reduce((sum, use) => sum + use.bytes, 0);
  let free = budget.minFreeBytes > 0 ? await freeBytesOf(root) : Infinity;
  const over = (): boolean =>
    (budget.maxBytes > 0 && total > budget.maxBytes) ||
    (budget.minFreeBytes > 0 && free < budget.minFreeBytes);
  const evicted: string[] = [];
  for (const use of uses.filter((candidate) => !candidate.linked).sort((a, b) => a.usedAt - b.usedAt)) {
    if (!over()) break;
    // Only an entry nobody is publishing or filling: its lock taken at once, or left for a later sweep.
    const held = await lockFile(join(root, `${use.name}.lock`), 0, new AbortController().signal).catch(
      () => undefined,
    );
    if (held === undefined) continue;
    try {
      const now = await useOf(root, use.name);
      if (now === undefined || now.linked) continue;
      await removeTree(join(root, use.name));
      total -= use.bytes;
      free += use.bytes;
      evicted.push(use.name);
      log.info({ entry: use.name, bytes: use.bytes }, 'node cache entry evicted');
    } finally {
      await held.release();
    }
  }
  if (over())
    log.warn(
      { cacheBytes: total, maxBytes: budget.maxBytes, freeBytes: free, minFreeBytes: budget.minFreeBytes },
      'node cache over its budget: every entry left is in use',
    );
  return evicted;
};
