/**
 * End to end on the real process (`dist/cli.js`, sync mode, beside the V2 stand-in), for S3 (s3rver), GCS (the
 * stand-in), Azure Blob (azurite) and `hf://` (the Hub stand-in): ten models of one storage URI cost one object's
 * bytes (counted by a metered relay in front of each store: they list, then fetch, so no body is opened before the
 * reuse is decided), each its own dir, marker and copy of the files; a changed object is a new content.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { killAllCli } from '../helpers/cli-process';
import { listTree } from '../helpers/file-tree';
import { compareFile, coverage, mebibyte, stampedBytes } from '../helpers/ranged-sync';
import {
  useStores,
  useStoreSync,
  type ModelEntry,
  type StoreReach,
  type StoreSyncRun,
} from '../helpers/store-sync';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('same-content-stores');
const stores = useStores();
const runs = useStoreSync();

// 40 MiB: over the 32 MiB at which a file is fetched in ranged parts, 10 of 4 MiB over the default 8 streams (each
// connection starts with a range of its own, so none is split before the end). The relays do not slow anything.
const size = 40 * mebibyte;
const relay = {};
const weights = 'model.safetensors';
const config = '{"architectures":["LlamaForCausalLM"]}';
let v1: Buffer;
let v2: Buffer;
beforeAll(() => {
  v1 = stampedBytes(size, 'v1');
  v2 = stampedBytes(size, 'v2');
});

const named = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

/** Each model's files but the marker, and its one marker. */
const modelDirOf = async (run: StoreSyncRun, model: string) => {
  const entries = await listTree(join(run.modelDir, model));
  return {
    files: entries.filter((entry) => !entry.startsWith('SUCCESS.')),
    markers: entries.filter((entry) => entry.startsWith('SUCCESS.')).length,
  };
};

/** The inodes of `file` in the dirs of `models`, as a set. */
const inodesOf = async (
  run: StoreSyncRun,
  models: ReadonlyArray<string>,
  file: string,
): Promise<Set<number>> =>
  new Set(await Promise.all(models.map(async (model) => (await stat(join(run.modelDir, model, file))).ino)));

const logsOf = (run: StoreSyncRun, msg: string, since = 0) =>
  run.cli.logs.slice(since).filter((log) => log.msg === msg);

describe.each(stores)('models of one content on $name, on the real process', (store) => {
  const models = (reach: StoreReach, prefix: string, names: ReadonlyArray<string>): ModelEntry[] =>
    names.map((modelName) => ({
      modelName,
      modelSpec: { storageUri: reach.uri(prefix), framework: 'sklearn' },
    }));
  /** The byte ranges the GETs of the weights of model `prefix` asked for, from request `from` on (none: all). */
  const rangesRead = (reach: StoreReach, prefix: string, from = 0) => {
    const later = new Set(reach.requests.slice(from));
    return reach
      .requestsFor(prefix, weights)
      .filter((request) => later.has(request) && request.method === 'GET')
      .map((request) => request.range ?? { first: 0 });
  };

  it('downloads ten models of one storageUri once, each its own dir, marker and files', async () => {
    await store.put('ten', { 'config.json': config, [weights]: v1 });
    const reach = await store.reach(relay);
    const names = named('shared', 10);
    const run = await runs.start(tmp.path, reach, models(reach, 'ten', names));

    await Promise.all(names.map((model) => run.loaded(model)));

    expect([...run.standIn.loaded].sort()).toEqual([...names].sort());
    for (const model of names) {
      expect(await modelDirOf(run, model)).toEqual({ files: ['config.json', weights], markers: 1 });
    }
    expect((await inodesOf(run, names, weights)).size).toBe(names.length);
    expect((await inodesOf(run, names, 'config.json')).size).toBe(names.length);
    expect(await compareFile(join(run.modelDir, names[0]!, weights), v1)).toBe('identical');
    // One object's bytes (its ranged parts, each byte once), and the nine others filled from its dir.
    const ranges = rangesRead(reach, 'ten');
    expect(ranges.length).toBeGreaterThan(1);
    expect(coverage(ranges, size)).toEqual([[0, size - 1]]);
    expect(reach.bytesServed).toBeGreaterThan(size);
    expect(reach.bytesServed).toBeLessThanOrEqual(1.1 * size);
    expect(logsOf(run, 'model filled from another model')).toHaveLength(9);
    const loaded = logsOf(run, 'model loaded');
    expect(loaded.filter((log) => log['bytes'] !== undefined)).toHaveLength(1);
    expect(
      loaded.filter((log) => log['filledBytes'] !== undefined && log['bytes'] === undefined),
    ).toHaveLength(9);
    expect(logsOf(run, 'model step failed; retrying')).toEqual([]);
  }, 90_000);

  it('downloads the object again for models added after it changed, and the first models keep theirs', async () => {
    await store.put('waves', { 'config.json': config, [weights]: v1 });
    const reach = await store.reach(relay);
    const [first, second] = [named('first', 5), named('second', 5)];
    const run = await runs.start(tmp.path, reach, models(reach, 'waves', first));
    await Promise.all(first.map((model) => run.loaded(model)));
    const firstInodes = await inodesOf(run, first, weights);
    const [since, requestsBefore, bytesBefore] = [
      run.cli.logs.length,
      reach.requests.length,
      reach.bytesServed,
    ];

    // A new version of the same size under the same name: a new ETag, generation or commit, so a new identity.
    await store.put('waves', { 'config.json': config, [weights]: v2 });
    run.write(models(reach, 'waves', [...first, ...second]));
    await Promise.all(second.map((model) => run.loaded(model, since)));

    expect(await inodesOf(run, first, weights)).toEqual(firstInodes);
    const secondInodes = await inodesOf(run, second, weights);
    expect(secondInodes.size).toBe(second.length);
    expect([...secondInodes].filter((inode) => firstInodes.has(inode))).toEqual([]);
    expect(await compareFile(join(run.modelDir, first[0]!, weights), v1)).toBe('identical');
    expect(await compareFile(join(run.modelDir, second[0]!, weights), v2)).toBe('identical');
    for (const model of second) {
      expect(await modelDirOf(run, model)).toEqual({ files: ['config.json', weights], markers: 1 });
    }
    // The second wave fetched the new object once, whole; the first was neither fetched nor loaded again.
    const bytes = reach.bytesServed - bytesBefore;
    expect(bytes).toBeGreaterThan(size);
    expect(bytes).toBeLessThanOrEqual(1.1 * size);
    expect(coverage(rangesRead(reach, 'waves', requestsBefore), size)).toEqual([[0, size - 1]]);
    expect(logsOf(run, 'model filled from another model', since)).toHaveLength(4);
    expect(
      logsOf(run, 'model filled from another model', since).every((log) =>
        second.includes(String(log['model'])),
      ),
    ).toBe(true);
    expect(run.standIn.loads.filter((load) => first.includes(load.name))).toHaveLength(first.length);
    expect([...run.standIn.loaded].sort()).toEqual([...first, ...second].sort());
    expect(run.standIn.requests.filter((request) => request.path.endsWith('/unload'))).toEqual([]);
  }, 90_000);
});
