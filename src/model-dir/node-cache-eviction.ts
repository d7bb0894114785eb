/** Eviction from the node cache, least recently used entries first (docs/operating.md, The node cache, Eviction). */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../core/errors';
import { fileStats, lockFile, removeHeldLockFile, removeTree, statfsFreeBytes, withDir } from '../fs';
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
/** The dir a publish of entry `<key>` fills before renaming it into place (node-cache.ts, entryPaths). */
const tmpName = /^\.tmp-([0-9a-f]{64})-/;

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

// An entry or temp dir removed meanwhile (another process's sweep, a publish renaming it into place) is simply gone.
const useIfThere = (root: string, name: string): Promise<EntryUse | undefined> =>
  useOf(root, name).catch((cause: unknown) => {
    if (errorCode(cause) === 'ENOENT') return undefined;
    throw cause;
  });

/** The lock file of entry `key` (node-cache.ts, entryPaths). */
const lockPath = (root: string, key: string): string => join(root, `${key}.lock`);
const lockName = /^([0-9a-f]{64})\.lock$/;

/** The lock of entry `key`, taken at once, or undefined: another process holds it (publishing, filling). */
const lockNow = (root: string, key: string) =>
  lockFile(lockPath(root, key), 0, new AbortController().signal).catch(() => undefined);

/** True when entry `key` is there (a dir or anything else holding its name). */
const entryThere = (root: string, key: string): Promise<boolean> =>
  lstat(join(root, key)).then(
    () => true,
    (cause: unknown) => {
      if (errorCode(cause) === 'ENOENT') return false;
      throw cause;
    },
  );

/**
 * Removes the lock files no entry has (a claim whose download failed, an entry evicted by an older modelsync), each
 * under its own lock taken at once: one per content ever claimed on the node would otherwise stay for good.
 */
const removeOrphanLocks = async (root: string, names: readonly string[]): Promise<void> => {
  const present = new Set(names);
  for (const name of names) {
    const key = lockName.exec(name)?.[1];
    if (key === undefined || present.has(key)) continue;
    const held = await lockNow(root, key);
    if (held === undefined) continue; // a claim or a publish holds it
    try {
      // Only a holder of the lock makes the entry: none came since the listing, or it stays.
      if (!(await entryThere(root, key))) await removeHeldLockFile(lockPath(root, key));
    } finally {
      await held.release();
    }
  }
};

/**
 * Removes the temp dirs among `names` whose publish was cut short (kill -9, OOM, a reboot): the publisher holds the
 * entry's lock from before it makes its temp dir until the rename, so one whose lock is free is never used again.
 * A claim of the same identity removes them too, under the lock. Resolves to the bytes of those being published now.
 */
const removeLeftovers = async (root: string, names: readonly string[], log: Logger): Promise<number> => {
  let publishing = 0;
  for (const name of names) {
    const key = tmpName.exec(name)?.[1];
    if (key === undefined) continue;
    const held = await lockNow(root, key);
    if (held === undefined) {
      publishing += (await useIfThere(root, name))?.bytes ?? 0;
      continue;
    }
    try {
      const bytes = (await useIfThere(root, name))?.bytes ?? 0;
      await removeTree(join(root, name));
      log.info({ dir: name, bytes }, 'node cache leftover of a publish cut short removed');
    } finally {
      await held.release();
    }
  }
  return publishing;
};

/**
 * Removes the leftovers of publishes cut short, then evicts from the node cache at `root` until `budget` holds or
 * nothing more may go; returns the names evicted. A temp dir being published counts against the size budget.
 */
export const evictNodeCache = async (
  root: string,
  budget: EvictionBudget,
  log: Logger,
  freeBytesOf: (path: string) => Promise<number> = statfsFreeBytes,
): Promise<string[]> => {
  const names = await readdir(root);
  // With no budget too: a leftover is never used, and holds its bytes for good where it is a copy.
  const publishing = await removeLeftovers(root, names, log);
  await removeOrphanLocks(root, names);
  if (budget.maxBytes === 0 && budget.minFreeBytes === 0) return [];
  const uses: EntryUse[] = [];
  for (const name of names) {
    if (!entryName.test(name)) continue;
    const use = await useIfThere(root, name);
    if (use !== undefined) uses.push(use);
  }
  let total = publishing + uses.reduce((sum, use) => sum + use.bytes, 0);
  let free = budget.minFreeBytes > 0 ? await freeBytesOf(root) : Infinity;
  const over = (): boolean =>
    (budget.maxBytes > 0 && total > budget.maxBytes) ||
    (budget.minFreeBytes > 0 && free < budget.minFreeBytes);
  const evicted: string[] = [];
  for (const use of uses.filter((candidate) => !candidate.linked).sort((a, b) => a.usedAt - b.usedAt)) {
    if (!over()) break;
    // Only an entry nobody is publishing or filling: its lock taken at once, or left for a later sweep.
    const held = await lockNow(root, use.name);
    if (held === undefined) continue;
    try {
      const now = await useOf(root, use.name);
      if (now === undefined || now.linked) continue;
      await removeTree(join(root, use.name));
      await removeHeldLockFile(lockPath(root, use.name));
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
