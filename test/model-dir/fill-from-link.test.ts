/**
 * Tests of modelDirStore.fillFrom at its link() step (`linkSameContent`): refused (the files are copied) or raced by a
 * neighbour.
 */
import { mkdir, readFile, rename, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { modelDirStore } from '../../src/model-dir/store';
import type { ModelStore } from '../../src/ports';
import { writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { install } from '../helpers/install';
import { LogSink, reasonsIn } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

/** Runs just before each link() the store makes; what it throws, link() throws. */
let beforeLink: ((from: string) => Promise<void>) | undefined;
jest.mock('node:fs/promises', () => {
  const actual = jest.requireActual<typeof import('node:fs/promises')>('node:fs/promises');
  return {
    ...actual,
    link: async (from: string, to: string) => {
      await beforeLink?.(from);
      return actual.link(from, to);
    },
  };
});

const tmp = useTempDir('fill-link');
const live = (): AbortSignal => new AbortController().signal;
const [src, dst] = [name('source'), name('copy')];
const shared = spec('https://models.example/model.bin');
const files = { 'model.bin': 'weights of the model', 'conf/config.json': '{}' };

let root: string;
let store: ModelStore;
let log: LogSink;
beforeEach(async () => {
  root = join(tmp.path, 'models');
  await mkdir(root);
  log = new LogSink();
  store = modelDirStore({ root, log: pino({ level: 'info' }, log), linkSameContent: true });
  await install(store, src, shared, (dir) => writeFiles(dir, files), live());
});
afterEach(() => (beforeLink = undefined));

const inode = async (path: string): Promise<number> => (await stat(path)).ino;

describe('modelDirStore.fillFrom at link()', () => {
  it.each(['EXDEV', 'EPERM', 'EMLINK'])('copies every file when link() fails with %s', async (code) => {
    const staged = await store.stage(dst, shared, live());
    beforeLink = () => Promise.reject(Object.assign(new Error(`${code}: link refused`), { code }));

    const filled = await store.fillFrom(src, staged, live());
    await staged.commit();

    expect(filled).toMatchObject({ files: 2, linkedBytes: 0 });
    expect(filled!.clonedBytes + filled!.copiedBytes).toBe(22);
    for (const [file, content] of Object.entries(files)) {
      expect(await readFile(join(root, dst, file), 'utf8')).toBe(content);
      expect(await inode(join(root, dst, file))).not.toBe(await inode(join(root, src, file)));
    }
  });

  it('refuses when a neighbour swaps a checked file for a symlink just before it is linked', async () => {
    const secret = join(tmp.path, 'secret');
    await writeFile(secret, 'x'.repeat(files['model.bin'].length));
    const staged = await store.stage(dst, shared, live());
    beforeLink = async (from) => {
      if (!from.endsWith('/model.bin')) return;
      await rename(join(root, src, 'model.bin'), join(tmp.path, 'moved'));
      await symlink(secret, join(root, src, 'model.bin'));
    };

    expect(await store.fillFrom(src, staged, live())).toBeUndefined();
    expect(reasonsIn(log)).toEqual([`${join(root, src, 'model.bin')} was replaced while it was linked`]);
    await staged.abandon(new Error('not filled'));
    expect(await readFile(secret, 'utf8')).toBe('x'.repeat(20));
  });

  it('fails with a filesystem error, not a refusal, when link() fails for another reason', async () => {
    const staged = await store.stage(dst, shared, live());
    beforeLink = () => Promise.reject(Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' }));

    await expect(store.fillFrom(src, staged, live())).rejects.toMatchObject({
      kind: 'filesystem',
      retryable: true,
    });
    await staged.abandon(new Error('not filled'));
  });
});
