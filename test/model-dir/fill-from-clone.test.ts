/**
 * Tests of modelDirStore.fillFrom's choice between a clone and a copy, with the clone injected at `copyFile` (this
 * machine's ext4 and tmpfs have none, and mkfs.btrfs/mkfs.xfs are not installed to make a loop image): a clone
 * where the file system clones, a copy within the disk check where it refuses.
 */
import { mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { spaceCheck } from '../../src/fs';
import { modelDirStore } from '../../src/model-dir/store';
import type { ModelStore } from '../../src/ports';
import { listTree, overwriteInPlace, writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { install } from '../helpers/install';
import { injectedClone } from '../helpers/injected-clone';
import { useTempDir } from '../helpers/temp-dir';

jest.mock('node:fs/promises', () =>
  jest
    .requireActual<typeof import('../helpers/injected-clone')>('../helpers/injected-clone')
    .withInjectedClone(),
);

const tmp = useTempDir('fill-clone');
const live = (): AbortSignal => new AbortController().signal;
const [src, dst] = [name('source'), name('copy')];
const shared = spec('https://models.example/model.bin');
const files = { 'model.bin': 'weights of the model', 'conf/config.json': '{"layers":3}', 'conf/x.txt': 'x' };
const totalBytes = 33;

let root: string;
/** The bytes each disk check asked for. */
let checked: number[];
/** A store whose disk check records what it is asked, and finds `freeBytes` free. */
const storeWith = (freeBytes = 2 ** 40): ModelStore => {
  const check = spaceCheck(0, { freeBytesOf: () => Promise.resolve(freeBytes) });
  return modelDirStore({
    root,
    log: pino({ level: 'silent' }),
    spaceCheck: (dir, bytes, what) => (checked.push(bytes), check(dir, bytes, what)),
  });
};
beforeEach(async () => {
  root = join(tmp.path, 'models');
  await mkdir(root);
  checked = [];
  await install(storeWith(), src, shared, (dir) => writeFiles(dir, files), live());
  checked = [];
});
afterEach(() => (injectedClone.outcome = () => 'clone'));

const inode = async (path: string): Promise<number> => (await stat(path)).ino;

describe('modelDirStore.fillFrom with clones', () => {
  it('clones every file where the file system clones, asking the disk for nothing', async () => {
    const store = storeWith();
    const staged = await store.stage(dst, shared, live());

    const filled = await store.fillFrom(src, staged, live());
    await staged.commit();

    expect(filled).toEqual({ files: 3, linkedBytes: 0, clonedBytes: totalBytes, copiedBytes: 0 });
    expect(checked).toEqual([0]); // the stage's own check, before any size is known
    for (const file of Object.keys(files)) {
      expect(await inode(join(root, dst, file))).not.toBe(await inode(join(root, src, file)));
      await overwriteInPlace(join(root, src, file));
      expect(await readFile(join(root, dst, file), 'utf8')).toBe(files[file as keyof typeof files]);
    }
  });

  it.each(['ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EINVAL'])(
    'copies every file, within one disk check of all the bytes, when the clone fails with %s',
    async (code) => {
      injectedClone.outcome = () => code;
      const store = storeWith();
      const staged = await store.stage(dst, shared, live());

      const filled = await store.fillFrom(src, staged, live());
      await staged.commit();

      expect(filled).toEqual({ files: 3, linkedBytes: 0, clonedBytes: 0, copiedBytes: totalBytes });
      expect(checked).toEqual([0, totalBytes]);
      expect(await readFile(join(root, dst, 'conf/config.json'), 'utf8')).toBe(files['conf/config.json']);
    },
  );

  it('checks the disk only for the bytes left once a clone is refused mid-way', async () => {
    // The top dir's file clones; the files of conf/ are refused, and copied.
    injectedClone.outcome = (to) => (to.endsWith('/model.bin') ? 'clone' : 'EXDEV');
    const store = storeWith();
    const staged = await store.stage(dst, shared, live());

    const filled = await store.fillFrom(src, staged, live());

    expect(filled).toEqual({ files: 3, linkedBytes: 0, clonedBytes: 20, copiedBytes: 13 });
    expect(checked).toEqual([0, 13]);
    await staged.abandon(new Error('done'));
  });

  it('fails with no-space, leaving no file in the staging dir, when the copies would not fit', async () => {
    injectedClone.outcome = () => 'ENOTSUP';
    const store = storeWith(totalBytes - 1);
    const staged = await store.stage(dst, shared, live());
    const [path] = (await readdir(root)).filter((entry) => entry.startsWith('.tmp-'));

    await expect(store.fillFrom(src, staged, live())).rejects.toMatchObject({
      kind: 'no-space',
      retryable: false,
      message: expect.stringContaining('does not fit on the model volume') as unknown,
    });
    expect((await listTree(join(root, path!))).filter((entry) => !entry.endsWith('/'))).toEqual([]);
    await staged.abandon(new Error('no room'));
    expect(await readdir(root)).toEqual([src]);
  });

  it('fails with a filesystem error, not a refusal, when the clone fails for another reason', async () => {
    injectedClone.outcome = () => 'EIO';
    const store = storeWith();
    const staged = await store.stage(dst, shared, live());

    await expect(store.fillFrom(src, staged, live())).rejects.toMatchObject({
      kind: 'filesystem',
      retryable: true,
    });
    await staged.abandon(new Error('EIO'));
  });
});
