import { planObjects } from '../../../src/storage/object-store/plan-objects';
import type { FileSelection } from '../../../src/core/file-selection';
import type { ObjectStoreClient } from '../../../src/storage/object-store/client';
import { MemoryStore } from './memory-store';

const signal = new AbortController().signal;

const plan = (store: MemoryStore, prefix: string, select?: FileSelection) =>
  planObjects(store.client, store.at(prefix), signal, { maxModelFiles: 10_000 }, select);

const paths = async (store: MemoryStore, prefix: string, select?: FileSelection): Promise<string[]> =>
  (await plan(store, prefix, select)).map((item) => item.path);

const tokenizerModel = (): MemoryStore =>
  new MemoryStore()
    .put('m1/config.json', '{}')
    .put('m1/tokenizer.json', '{}')
    .put('m1/tokenizer_config.json', '{}')
    .put('m1/model-00001.safetensors', 'weights')
    .put('m1/sub/extra.json', '{}');

describe('planObjects', () => {
  it('plans every object when there is no selection', async () => {
    expect(await paths(tokenizerModel(), 'm1')).toHaveLength(5);
  });

  it('plans only the objects whose paths in the model dir the allow patterns take', async () => {
    expect(await paths(tokenizerModel(), 'm1', { allowPatterns: ['*.json', 'tokenizer*'] })).toEqual([
      'config.json',
      'sub/extra.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  });

  it('matches the path below the prefix, never the key with the prefix', async () => {
    await expect(plan(tokenizerModel(), 'm1', { allowPatterns: ['m1/*'] })).rejects.toMatchObject({
      kind: 'not-found',
    });
    expect(await paths(tokenizerModel(), 'm1', { allowPatterns: ['sub/*'] })).toEqual(['sub/extra.json']);
  });

  it('leaves out what the ignore patterns take, even when allowed', async () => {
    const select = { allowPatterns: ['*.json'], ignorePatterns: ['sub/', 'config.json'] };
    expect(await paths(tokenizerModel(), 'm1', select)).toEqual(['tokenizer.json', 'tokenizer_config.json']);
  });

  it('fails for good, naming the patterns and the count, when the patterns select none of the objects', async () => {
    await expect(plan(tokenizerModel(), 'm1', { allowPatterns: ['*.onnx'] })).rejects.toMatchObject({
      kind: 'not-found',
      retryable: false,
      message: 'mem://models/m1: the patterns allow=["*.onnx"] ignore=[] select none of its 5 objects',
    });
  });

  it('checks the one object a URI names against its base name', async () => {
    const store = new MemoryStore().put('models/m1/model.pt', 'x');
    expect(await paths(store, 'models/m1/model.pt', { allowPatterns: ['*.pt'] })).toEqual(['model.pt']);
    await expect(plan(store, 'models/m1/model.pt', { allowPatterns: ['*.json'] })).rejects.toMatchObject({
      kind: 'not-found',
      message: expect.stringContaining('select none of its 1 object') as string,
    });
  });

  it('keeps a model that is one archive whole, handing the selection on to its extraction', async () => {
    const store = new MemoryStore().put('m1/model.tar.gz', 'x');
    const select = { allowPatterns: ['*.json'] };
    const planned = await plan(store, 'm1', select);
    expect(planned.map(({ path, select: entries }) => ({ path, entries }))).toEqual([
      { path: 'model.tar.gz', entries: select },
    ]);
  });

  it('selects an archive among other objects by its name, like any object', async () => {
    const store = new MemoryStore().put('m1/model.tar.gz', 'x').put('m1/config.json', '{}');
    const planned = await plan(store, 'm1', { allowPatterns: ['*.tar.gz'] });
    expect(planned.map(({ path, select }) => ({ path, select }))).toEqual([
      { path: 'model.tar.gz', select: undefined },
    ]);
  });

  it('still refuses a key that would leave the model dir, selected or not', async () => {
    const store = new MemoryStore().put('m1/a.json', '{}').put('m1/../escape.bin', 'x');
    await expect(plan(store, 'm1', { allowPatterns: ['*.json'] })).rejects.toMatchObject({ kind: 'refused' });
  });
});

describe('folder markers without a trailing slash', () => {
  it('leaves out an empty object that another object needs as its directory (s3fs and Hadoop tools write them)', async () => {
    // `m1/sub` of 0 bytes is the folder `m1/sub/` as some tools mark one (no trailing "/"): KServe's initializer
    // skips it (it skips every empty object); saving it as a file would refuse the model.
    const store = new MemoryStore()
      .put('m1/config.json', '{}')
      .put('m1/sub', '')
      .put('m1/sub/weights.bin', 'weights');
    expect(await paths(store, 'm1')).toEqual(['config.json', 'sub/weights.bin']);
  });

  it('keeps an empty object no other object needs as a directory (an __init__.py)', async () => {
    const store = new MemoryStore().put('m1/code/__init__.py', '').put('m1/code/model.py', 'x = 1');
    expect(await paths(store, 'm1')).toEqual(['code/__init__.py', 'code/model.py']);
  });

  it('still refuses an object with bytes that another object needs as its directory', async () => {
    const store = new MemoryStore().put('m1/sub', 'bytes').put('m1/sub/weights.bin', 'weights');
    await expect(plan(store, 'm1')).rejects.toMatchObject({ kind: 'refused' });
  });
});

describe('a listing that names objects outside the prefix it was asked for', () => {
  /** A store that lists `keys` whatever prefix it is asked for (a broken S3-compatible store, a hostile one). */
  const listing = (keys: ReadonlyArray<string>): ObjectStoreClient => ({
    // eslint-disable-next-line @typescript-eslint/require-await -- an async generator of a fixed listing
    list: async function* () {
      for (const key of keys) yield { key, size: 1, version: 'v1' };
    },
    read: () => Promise.reject(new Error('no read expected')),
  });
  const location = { bucket: 'models', prefix: 'm1', display: 'mem://models/m1' };

  it.each([
    ['another dir', ['m1/a.bin', 'zz/evil.bin'], 'zz/evil.bin'],
    ['a sibling the prefix is the start of', ['m1/a.bin', 'm10xsecond.bin'], 'm10xsecond.bin'],
    ['a sibling dir', ['m1/a.bin', 'm10/b.bin'], 'm10/b.bin'],
  ])(
    'refuses the listing, naming the object (%s), never saving it under a cut name',
    async (_label, keys, bad) => {
      // Before, `zz/evil.bin` was saved as `evil.bin` and `m10xsecond.bin` as `xsecond.bin`: another file set.
      await expect(planObjects(listing(keys), location, signal, { maxModelFiles: 10 })).rejects.toMatchObject(
        {
          kind: 'invalid-response',
          retryable: false,
          message: expect.stringContaining(JSON.stringify(bad)) as string,
        },
      );
    },
  );

  it('refuses a lone object listed for a URI naming one object when its key is not that name', async () => {
    const client = listing(['m1.bak']);
    const one = { bucket: 'models', prefix: 'm1.bin', display: 'mem://models/m1.bin' };
    await expect(planObjects(client, one, signal, { maxModelFiles: 10 })).rejects.toMatchObject({
      kind: 'invalid-response',
    });
  });
});

describe('a listing of deep keys', () => {
  it('places 5,000 objects 1,500 dirs deep in one pass over each key, not one per dir above it', async () => {
    // A store's keys may be 4 KiB: each object's every dir above it was built and hashed anew, so a listing of
    // deep keys held the event loop for minutes (2,000 objects 400 dirs deep: 2.9 s; these: 358 s).
    const deep = Array.from({ length: 1500 }, (_, i) => `${i % 10}`).join('/');
    const keys = Array.from({ length: 5000 }, (_, i) => `m1/${deep}/f${i}`);
    const client: ObjectStoreClient = {
      // eslint-disable-next-line @typescript-eslint/require-await -- an async generator of a fixed listing
      list: async function* () {
        for (const key of keys) yield { key, size: 1, version: 'v1' };
        yield { key: `m1/${deep}`, size: 0, version: 'v1' }; // a folder marker, left out
      },
      read: () => Promise.reject(new Error('no read expected')),
    };
    const location = { bucket: 'models', prefix: 'm1', display: 'mem://models/m1' };
    // The planning is synchronous: no test timeout can end it, so its time is checked after it (358 s before).
    const started = performance.now();
    const plan = await planObjects(client, location, signal, { maxModelFiles: 10_000 });
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(plan).toHaveLength(5000);
    expect(plan[4999]!.path).toBe(`${deep}/f4999`);
  }, 60_000);
});
