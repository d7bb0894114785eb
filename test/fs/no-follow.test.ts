/** Tests of the link-safe fs steps: deletes that unlink links and never descend them, even when swapped mid-delete. */
import { lstat, mkdir, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { permanentError } from '../../src/core/errors';
import {
  inRealDirs,
  isSameEntry,
  namingDirs,
  openDir,
  removeTree,
  withDir,
  type OpenDir,
} from '../../src/fs/no-follow';
import { dirsBottomUp, listedFileSizes, syncListed } from '../../src/fs/listed-files';
import { seededRandom } from '../../src/testing/seeded-random';
import { makeFifo, makeSentinel, type Sentinel } from '../hardening/neighbour/sentinel';
import { countingHandles } from '../helpers/held-handles';
import { exists, listTree, writeFiles } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('no-follow');
let outside: Sentinel;
let work: string;

beforeEach(async () => {
  outside = await makeSentinel(join(tmp.path, 'outside'));
  work = join(tmp.path, 'work');
  await mkdir(work);
});

describe('removeTree', () => {
  it('deletes a dir with everything in it, and counts a missing path as done', async () => {
    await writeFiles(join(work, 'tree'), { a: '1', 'b/c': '2', 'b/d/e': '3' });
    await removeTree(join(work, 'tree'));
    await removeTree(join(work, 'tree'));
    expect(await readdir(work)).toEqual([]);
  });

  it('unlinks links inside the tree, and a link that is the tree itself, never their targets', async () => {
    await writeFiles(join(work, 'tree'), { a: '1' });
    await symlink(outside.dir, join(work, 'tree', 'to-dir'));
    await symlink(join(outside.dir, 'victim'), join(work, 'tree', 'to-file'));
    await symlink(outside.dir, join(work, 'link'));
    await makeFifo(join(work, 'tree', 'fifo'));
    await removeTree(join(work, 'tree'));
    await removeTree(join(work, 'link'));
    expect(await readdir(work)).toEqual([]);
    await outside.expectUntouched();
  });

  // The tree is entered by handle, so Node's errno messages named /proc/self/fd/<n> (a descriptor closed, maybe
  // reused, by the time the line is read), never the file that could not be deleted.
  it('names the entry it could not delete by its path, never by the handle it was reached through', async () => {
    await writeFiles(join(work, 'tree'), { 'SUCCESS.x': '{}', 'sub/deeper/weights.bin': 'w' });
    const realUnlink = fsPromises.unlink;
    const unlinking = jest.spyOn(fsPromises, 'unlink').mockImplementation((path) =>
      String(path).endsWith('.bin')
        ? Promise.reject(
            Object.assign(new Error(`EACCES: permission denied, unlink '${String(path)}'`), {
              code: 'EACCES',
              syscall: 'unlink',
              path: String(path),
            }),
          )
        : realUnlink(path),
    );
    try {
      const failure = await removeTree(join(work, 'tree')).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      // Two dirs down, reached through handles: named where it is (a subdir is moved up to be deleted), a path that
      // leads to it.
      const named = /^cannot delete (.+): EACCES: permission denied, unlink '(.+)'$/.exec(
        failure?.message ?? '',
      );
      expect(named?.[1]).toBe(join(work, 'tree'));
      expect(named?.[2]).toMatch(
        new RegExp(`^${join(work, 'tree')}/\\.deleting-[0-9a-f]{16}/weights\\.bin$`),
      );
      expect(await exists(named?.[2] ?? '')).toBe(true);
    } finally {
      unlinking.mockRestore();
    }
  });

  it('holds a few dirs open however deep the tree (a tree deeper than the descriptor limit is deleted)', async () => {
    // A neighbour can nest dirs as deep as it likes: one descriptor a level ran into EMFILE (and took the others').
    const depth = 200;
    let path = join(work, 'deep');
    for (let level = 0; level < depth; level++) path = join(path, 'd');
    await writeFiles(path, { 'file.bin': 'x' });
    const { mostHeld } = await countingHandles(() => removeTree(join(work, 'deep')));
    expect(await exists(join(work, 'deep'))).toBe(false);
    expect(await readdir(work)).toEqual([]);
    expect(mostHeld).toBeLessThanOrEqual(4);
  });

  it('fails with a filesystem error naming the path when it cannot delete', async () => {
    await writeFile(join(work, 'file'), '');
    await expect(removeTree(join(work, 'file', 'below'))).rejects.toMatchObject({
      kind: 'filesystem',
      message: expect.stringContaining(join(work, 'file', 'below')) as unknown,
    });
  });

  it('never deletes outside while 4 neighbours keep swapping subdirs for links to outside, over 60 rounds', async () => {
    // Node's own fs.rm loses this race a few times in 200 rounds: it descends by path.
    const random = seededRandom(0x72656d6f);
    let swaps = 0;
    for (let round = 0; round < 60; round++) {
      const tree = join(work, `tree-${round}`);
      // Entries named like the sentinel's: a delete that follows a swapped-in link hits the sentinel's files.
      const subdirs = Array.from({ length: 20 }, (_, d) => `d${d}`);
      await writeFiles(
        tree,
        Object.fromEntries(
          subdirs.flatMap((d) => [`${d}/victim`, `${d}/model.bin`, `${d}/sub/deep.txt`].map((f) => [f, 'x'])),
        ),
      );
      let deleting = true;
      const neighbour = async (id: number): Promise<void> => {
        while (deleting) {
          const dir = join(tree, subdirs[Math.floor(random() * subdirs.length)]!);
          await rename(dir, join(tmp.path, `kept-${round}-${id}-${swaps}`))
            .then(
              () => symlink(outside.dir, dir).then(() => void swaps++),
              () => undefined,
            )
            .catch(() => undefined); // the tree is gone already
          await new Promise((resolve) => setImmediate(resolve));
        }
      };
      const neighbours = Promise.all([0, 1, 2, 3].map(neighbour));
      await removeTree(tree).catch(() => undefined); // the neighbour may win a race: an error, never a wrong delete
      deleting = false;
      await neighbours;
      await outside.expectUntouched();
    }
    expect(swaps).toBeGreaterThan(100);
  });
});

describe('inRealDirs', () => {
  it('makes the dirs on the way and hands a path that reaches the entry; one at the top as it is', async () => {
    await inRealDirs(work, 'a/./b//c.txt', (at) => writeFile(at, 'deep'), 0o750);
    await inRealDirs(work, 'top.txt', async (at) => {
      expect(at).toBe(join(work, 'top.txt'));
      await writeFile(at, 'top');
    });
    expect(await listTree(work)).toEqual(['a/', 'a/b/', 'a/b/c.txt', 'top.txt']);
    expect((await lstat(join(work, 'a', 'b'))).mode & 0o777).toBe(0o750);
  });

  it('fails at a dir on the way that is a link (to a dir outside), running nothing through it', async () => {
    await mkdir(join(work, 'a'));
    await symlink(outside.dir, join(work, 'a', 'b'));
    const use = jest.fn(() => Promise.resolve());
    await expect(inRealDirs(work, 'a/b/c.txt', use)).rejects.toMatchObject({ kind: 'filesystem' });
    expect(use).not.toHaveBeenCalled();
    await outside.expectUntouched();
  });

  it('refuses a path that climbs out', async () => {
    await expect(inRealDirs(work, 'a/../b', () => Promise.resolve())).rejects.toThrow('no path below a dir');
  });
});

describe('openDir', () => {
  it('refuses a link to a dir and a file, and reaches the dir it holds after its path is swapped', async () => {
    await symlink(outside.dir, join(work, 'link'));
    await writeFile(join(work, 'file'), '');
    // O_DIRECTORY|O_NOFOLLOW on a link: ENOTDIR on Linux (ELOOP elsewhere).
    await expect(openDir(join(work, 'link'))).rejects.toMatchObject({
      code: expect.stringMatching(/^(ENOTDIR|ELOOP)$/) as unknown,
    });
    await expect(openDir(join(work, 'file'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await mkdir(join(work, 'real'));
    await withDir(join(work, 'real'), async (dir) => {
      await rename(join(work, 'real'), join(work, 'moved'));
      await symlink(outside.dir, join(work, 'real'));
      expect(await isSameEntry(join(work, 'real'), dir.stats)).toBe(false);
      expect(await isSameEntry(join(work, 'moved'), dir.stats)).toBe(true);
      await writeFile(join(dir.ref, 'written'), 'through the handle');
    });
    expect(await readdir(join(work, 'moved'))).toEqual(['written']);
    await outside.expectUntouched();
  });
});

describe('syncListed', () => {
  it('flushes the listed files and their dirs without following a link or blocking on a FIFO listed', async () => {
    await writeFiles(join(work, 'tree'), { a: '1', 'b/c': '2' });
    await symlink(outside.dir, join(work, 'tree', 'to-dir'));
    await makeFifo(join(work, 'tree', 'b', 'fifo'));
    await withDir(join(work, 'tree'), (dir) => syncListed(dir, ['a', 'b/c', 'b/fifo', 'to-dir', 'gone']));
    expect(await listTree(join(work, 'tree'))).toEqual([
      'a',
      'b/',
      'b/c',
      'b/fifo',
      `to-dir -> ${outside.dir}`,
    ]);
    await outside.expectUntouched();
  });

  it('flushes a held dir whose path was deleted meanwhile', async () => {
    await mkdir(join(work, 'tree'));
    await withDir(join(work, 'tree'), async (dir) => {
      await rm(join(work, 'tree'), { recursive: true });
      await expect(syncListed(dir, [])).resolves.toBeUndefined();
      expect(await exists(join(work, 'tree'))).toBe(false);
      expect((await lstat(work)).isDirectory()).toBe(true);
    });
  });
});

describe('dirsBottomUp', () => {
  it('lists each dir once, deepest first, the top last', () => {
    expect(dirsBottomUp(['a/b/c', 'a/d', 'e', 'a/b'])).toEqual(['a/b/c', 'a/b', 'a/d', 'a', 'e', '']);
  });

  it('takes each dir above 10,000 dirs 1,000 deep once, not once per dir below it', () => {
    // An install's files may lie 1,000 dirs deep (a 4 KiB entry name): each of its dirs walked its every dir above
    // anew, 30 s of the background flush with the event loop held.
    const deep = Array.from({ length: 1000 }, (_, i) => `${i % 10}`).join('/');
    const parents = Array.from({ length: 10_000 }, (_, i) => `${deep}/x${i}`);
    // Synchronous: no test timeout can end it, so its time is checked after it.
    const started = performance.now();
    const dirs = dirsBottomUp(parents);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(dirs).toHaveLength(11_001);
    expect(dirs.slice(-3)).toEqual(['0/1', '0', '']);
  });
});

describe('listedFileSizes', () => {
  it('sizes the listed regular files reached through real dirs, never through a link, and leaves the rest out', async () => {
    await writeFiles(join(work, 'tree'), { a: '1', 'b/c': '22', 'file/x': '' });
    await writeFile(join(work, 'tree', 'not-dir'), 'x');
    await symlink(join(outside.dir, 'sub'), join(work, 'tree', 'via-link'));
    await symlink(join(outside.dir, 'victim'), join(work, 'tree', 'to-file'));
    await makeFifo(join(work, 'tree', 'b', 'fifo'));
    const listed = ['a', 'b/c', 'b/fifo', 'b/gone', 'not-dir/x', 'via-link/deep.txt', 'to-file', 'gone/x'];
    const sizes = await withDir(join(work, 'tree'), (dir) => listedFileSizes(dir, listed));
    expect(Object.fromEntries(sizes)).toEqual({ a: 1, 'b/c': 2 });
    await outside.expectUntouched();
  });

  it('holds a few dirs open for a listed file however deep, and never lists a dir', async () => {
    const depth = 200;
    const deep = Array.from({ length: depth }, () => 'd').join('/');
    await writeFiles(join(work, 'tree'), { [`${deep}/file.bin`]: 'xyz', top: '' });
    const listing = jest.spyOn(fsPromises, 'readdir');
    try {
      const { result: sizes, mostHeld } = await countingHandles(() =>
        withDir(join(work, 'tree'), (dir) => listedFileSizes(dir, [`${deep}/file.bin`, 'top'])),
      );
      expect(Object.fromEntries(sizes)).toEqual({ [`${deep}/file.bin`]: 3, top: 0 });
      expect(mostHeld).toBeLessThanOrEqual(3);
    } finally {
      listing.mockRestore();
    }
    expect(listing).not.toHaveBeenCalled();
  });
});

describe('namingDirs', () => {
  const dir = (ref: string, path: string) => ({ ref, path }) as OpenDir;

  it('names each dir by its path where a message gives its handle path, and no longer handle path that starts alike', () => {
    const error = permanentError('filesystem', 'cannot write /proc/self/fd/2/a, nor /proc/self/fd/23/b');
    const named = namingDirs(error, [
      dir('/proc/self/fd/2', '/mnt/models/.staging'),
      dir('/proc/self/fd/23', '/mnt/models'),
    ]);
    expect(named).toMatchObject({
      kind: 'filesystem',
      retryable: false,
      message: 'cannot write /mnt/models/.staging/a, nor /mnt/models/b',
    });
  });

  it('gives back the very error when no handle path is in it, and anything not an EffectError as it is', () => {
    const error = permanentError('filesystem', 'cannot write /mnt/models/a');
    expect(namingDirs(error, [dir('/proc/self/fd/2', '/x')])).toBe(error);
    const other = new Error('/proc/self/fd/2');
    expect(namingDirs(other, [dir('/proc/self/fd/2', '/x')])).toBe(other);
  });
});
