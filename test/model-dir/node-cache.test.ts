/**
 * Tests of the node cache through two model dir stores on one cache dir (two pods of a node): a claim, its publish
 * and the other's fill by read-only hard links; the cache dir made again once it is gone.
 */
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { modelDirStore } from '../../src/model-dir/store';
import type { CacheTake, ModelStore } from '../../src/ports';
import { writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('node-cache');
const live = (): AbortSignal => new AbortController().signal;
const model = name('llm');
const shared = spec('https://models.example/llm.bin');
const identity = 'http https://models.example/llm.bin "v1" 7 ';

/** One pod's store on the node's cache dir. */
const pod = async (which: string): Promise<ModelStore> => {
  const root = join(tmp.path, which);
  await mkdir(root);
  return modelDirStore({
    root,
    log: pino({ level: 'silent' }),
    nodeCache: { dir: join(tmp.path, 'cache'), maxBytes: 0, minFreeBytes: 0 },
  });
};

/** Takes the identity for `store`'s model: Claimed is downloaded (written), committed and published. */
const takeAndSettle = async (store: ModelStore): Promise<CacheTake['_tag']> => {
  const staged = await store.stage(model, shared, live());
  const taken = await store.nodeCache!.take(identity, staged, live());
  if (taken._tag === 'Claimed') await writeFiles(staged.dir, { 'llm.bin': 'weights' });
  await staged.commit(undefined, taken._tag === 'Claimed' ? new Map([['llm.bin', 7]]) : undefined);
  if (taken._tag === 'Claimed') expect(await taken.publish()).toEqual({ evicted: 0 });
  return taken._tag;
};

describe('the node cache of two model dir stores', () => {
  it('has the first pod download and publish, the second fill from it with the same read-only inode', async () => {
    const [a, b] = [await pod('a'), await pod('b')];
    expect(await takeAndSettle(a)).toBe('Claimed');
    expect(await takeAndSettle(b)).toBe('Filled');
    const [fromA, fromB] = [join(tmp.path, 'a', 'llm', 'llm.bin'), join(tmp.path, 'b', 'llm', 'llm.bin')];
    expect(await readFile(fromB, 'utf8')).toBe('weights');
    expect((await stat(fromB)).ino).toBe((await stat(fromA)).ino);
    expect((await stat(fromB)).mode & 0o777).toBe(0o444);
  });

  it('never publishes a model dir the model server swapped in after the install: the other pods get the bytes downloaded', async () => {
    // The publish read the model dir by its path after the install: a model server able to rename entries of the
    // model dir (an emptyDir is 0777) put its own dir there, the marker copied and a file of the same size, and
    // every pod on the node that took the entry loaded its bytes.
    const [a, b] = [await pod('a'), await pod('b')];
    const staged = await a.stage(model, shared, live());
    const taken = await a.nodeCache!.take(identity, staged, live());
    if (taken._tag !== 'Claimed') throw new Error(`expected a claim, got ${taken._tag}`);
    await writeFiles(staged.dir, { 'llm.bin': 'weights' });
    await staged.commit(undefined, new Map([['llm.bin', 7]]));
    const installed = join(tmp.path, 'a', 'llm');
    const marker = (await readdir(installed)).find((entry) => entry.startsWith('SUCCESS'))!;
    await rename(installed, join(tmp.path, 'a', 'llm-moved'));
    await writeFiles(installed, {
      'llm.bin': 'POISON!',
      [marker]: await readFile(join(tmp.path, 'a', 'llm-moved', marker), 'utf8'),
    });
    await taken.publish();
    const other = await b.stage(model, shared, live());
    const second = await b.nodeCache!.take(identity, other, live());
    if (second._tag === 'Filled') expect(await readFile(join(other.dir, 'llm.bin'), 'utf8')).toBe('weights');
    // Nothing was published: the other pod downloads the model itself.
    expect(second._tag).toBe('Claimed');
    if (second._tag === 'Claimed') await second.release();
    await other.abandon(new Error('done'));
  });

  it('makes the cache dir again when it was removed after a take', async () => {
    const a = await pod('a');
    expect(await takeAndSettle(a)).toBe('Claimed');
    await rm(join(tmp.path, 'cache'), { recursive: true });
    await a.remove(model);
    // The first take after finds no dir where it made one: it fails (the pod downloads), and the next makes it.
    const staged = await a.stage(model, shared, live());
    await a.nodeCache!.take(identity, staged, live()).then(
      (taken) => (taken._tag === 'Claimed' ? taken.release() : undefined),
      () => undefined,
    );
    await staged.abandon(new Error('not downloaded'));
    expect(await takeAndSettle(a)).toBe('Claimed');
    expect((await stat(join(tmp.path, 'cache'))).isDirectory()).toBe(true);
  });
});
