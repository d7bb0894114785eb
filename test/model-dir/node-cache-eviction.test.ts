/** Tests of evictNodeCache on a real temp dir: least recently used first, never an entry in use or locked. */
import { link, mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { lockFile } from '../../src/fs/file-lock';
import { evictNodeCache } from '../../src/model-dir/node-cache-eviction';
import { useTempDir } from '../helpers/temp-dir';

const log = pino({ level: 'silent' });
const KiB = 1024;
/** An entry name: what the cache names an identity's entry (a sha256 in hex). */
const key = (n: number): string => String(n).repeat(64).slice(0, 64);

describe('evictNodeCache', () => {
  const tmp = useTempDir('node-cache-eviction');

  /** Entry `n` holding one file of `bytes`, last used `minutesAgo`. */
  const entry = async (n: number, bytes: number, minutesAgo: number): Promise<string> => {
    const dir = join(tmp.path, 'cache', key(n));
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'model.bin'), Buffer.alloc(bytes));
    const at = new Date(Date.now() - minutesAgo * 60_000);
    await utimes(dir, at, at);
    return dir;
  };
  const left = async (): Promise<string[]> =>
    (await readdir(join(tmp.path, 'cache'))).filter((name) => !name.endsWith('.lock')).sort();

  it('removes the least recently used entries until the cache fits its size budget', async () => {
    await entry(1, 40 * KiB, 30);
    await entry(2, 40 * KiB, 10);
    await entry(3, 40 * KiB, 20);
    const evicted = await evictNodeCache(
      join(tmp.path, 'cache'),
      { maxBytes: 50 * KiB, minFreeBytes: 0 },
      log,
    );
    expect(evicted).toEqual([key(1), key(3)]);
    expect(await left()).toEqual([key(2)]);
  });

  it('keeps an entry a model dir still links, and one whose lock another holds, over the budget if it must', async () => {
    const linked = await entry(1, 40 * KiB, 30);
    await entry(2, 40 * KiB, 20);
    await mkdir(join(tmp.path, 'model'), { recursive: true });
    await link(join(linked, 'model.bin'), join(tmp.path, 'model', 'model.bin'));
    const held = await lockFile(
      join(tmp.path, 'cache', `${key(2)}.lock`),
      1000,
      new AbortController().signal,
    );
    try {
      expect(await evictNodeCache(join(tmp.path, 'cache'), { maxBytes: 1, minFreeBytes: 0 }, log)).toEqual(
        [],
      );
    } finally {
      await held.release();
    }
    expect(await left()).toEqual([key(1), key(2)]);
    expect(await evictNodeCache(join(tmp.path, 'cache'), { maxBytes: 1, minFreeBytes: 0 }, log)).toEqual([
      key(2),
    ]);
  });

  it('frees space down to the floor, by the free space the file system reports', async () => {
    await entry(1, 40 * KiB, 30);
    await entry(2, 40 * KiB, 20);
    // 50 KiB free, 100 KiB wanted: the oldest goes (50 + 40 = 90), then the next (130).
    const free = (): Promise<number> => Promise.resolve(50 * KiB);
    const floor = { maxBytes: 0, minFreeBytes: 100 * KiB };
    expect(await evictNodeCache(join(tmp.path, 'cache'), floor, log, free)).toEqual([key(1), key(2)]);
  });

  it('leaves alone what is not an entry: a held lock file, a temp dir being published, a link planted under an entry name', async () => {
    const cache = join(tmp.path, 'cache');
    await entry(1, 40 * KiB, 30);
    // Its publish is running: the publisher holds the entry's lock.
    await mkdir(join(cache, `.tmp-${key(3)}-abc`));
    const publishing = await lockFile(join(cache, `${key(3)}.lock`), 1000, new AbortController().signal);
    await mkdir(join(tmp.path, 'victim'));
    await writeFile(join(tmp.path, 'victim', 'kept'), 'kept');
    await symlink(join(tmp.path, 'victim'), join(cache, key(2)));
    try {
      expect(await evictNodeCache(cache, { maxBytes: 1, minFreeBytes: 0 }, log)).toEqual([key(1)]);
    } finally {
      await publishing.release();
    }
    // The evicted entry's lock file went with it (under its lock); the publisher's stays.
    expect((await readdir(cache)).sort()).toEqual([`${key(3)}.lock`, `.tmp-${key(3)}-abc`, key(2)].sort());
    expect(await readdir(join(tmp.path, 'victim'))).toEqual(['kept']);
  });

  it('removes what a publish cut short left (its lock free), with or without a budget, and keeps an entry', async () => {
    // A publisher killed mid-way (kill -9, OOM, a reboot) left its temp dir; before, only a later claim of the same
    // identity removed it, and across file systems it held its bytes for good, outside every budget.
    const cache = join(tmp.path, 'cache');
    await entry(1, 40 * KiB, 30);
    await mkdir(join(cache, `.tmp-${key(2)}-abc`));
    await writeFile(join(cache, `.tmp-${key(2)}-abc`, 'model.bin'), Buffer.alloc(40 * KiB));
    expect(await evictNodeCache(cache, { maxBytes: 0, minFreeBytes: 0 }, log)).toEqual([]);
    expect(await left()).toEqual([key(1)]);
  });

  it('counts a temp dir being published against the size budget, and keeps it', async () => {
    const cache = join(tmp.path, 'cache');
    await entry(1, 40 * KiB, 30);
    await mkdir(join(cache, `.tmp-${key(2)}-abc`));
    await writeFile(join(cache, `.tmp-${key(2)}-abc`, 'model.bin'), Buffer.alloc(40 * KiB));
    const publishing = await lockFile(join(cache, `${key(2)}.lock`), 1000, new AbortController().signal);
    try {
      // 40 KiB of entries, 40 KiB on the way: over 50 KiB, the entry goes.
      expect(await evictNodeCache(cache, { maxBytes: 50 * KiB, minFreeBytes: 0 }, log)).toEqual([key(1)]);
    } finally {
      await publishing.release();
    }
    expect(await left()).toEqual([`.tmp-${key(2)}-abc`]);
  });

  it("removes the lock files no entry has, with or without a budget, and keeps a held one and an entry's", async () => {
    // One lock file per content ever claimed on the node (each new version of a model is a new one) stayed for good:
    // a claim whose download failed, an entry evicted, left theirs.
    const cache = join(tmp.path, 'cache');
    await entry(1, 40 * KiB, 30);
    for (const n of [1, 2, 3, 4]) await writeFile(join(cache, `${key(n)}.lock`), '');
    const claiming = await lockFile(join(cache, `${key(4)}.lock`), 1000, new AbortController().signal);
    try {
      expect(await evictNodeCache(cache, { maxBytes: 0, minFreeBytes: 0 }, log)).toEqual([]);
    } finally {
      await claiming.release();
    }
    expect((await readdir(cache)).sort()).toEqual([key(1), `${key(1)}.lock`, `${key(4)}.lock`].sort());
  });

  it('does nothing without a budget', async () => {
    await entry(1, 40 * KiB, 30);
    expect(await evictNodeCache(join(tmp.path, 'cache'), { maxBytes: 0, minFreeBytes: 0 }, log)).toEqual([]);
  });
});
