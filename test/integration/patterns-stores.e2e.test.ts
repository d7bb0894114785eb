/**
 * End to end on the real process (`dist/cli.js`, sync mode, beside the V2 stand-in), for S3 (s3rver), GCS (the
 * stand-in), Azure Blob (azurite) and `hf://` (the Hub stand-in): `allowPatterns`/`ignorePatterns` pick the files from
 * the listing before any byte is fetched (seen from a metered relay in front of each store), and a selection of none
 * fails its model for good, naming the patterns, while everything loaded stays loaded.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { killAllCli } from '../helpers/cli-process';
import { listTree } from '../helpers/file-tree';
import { useStores, useStoreSync, type ModelEntry, type StoreReach } from '../helpers/store-sync';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('patterns-stores');
const stores = useStores();
const runs = useStoreSync();

/** A model's files, each naming `prefix` (the Hub's CDN serves blobs by content: one per file and prefix). */
const llm = (prefix: string): Readonly<Record<string, string>> => ({
  'config.json': `{"model_type":"llama","of":"${prefix}"}`,
  'tokenizer.json': `{"version":"1.0","of":"${prefix}"}`,
  'tokenizer_config.json': `{"padding_side":"left","of":"${prefix}"}`,
  'model-00001.safetensors': `weights of ${prefix}`,
  'sub/params.json': `{"dim":8,"of":"${prefix}"}`,
  'sub/dir/extra.bin': `extra of ${prefix}`,
});
const files = Object.keys(llm('llm'));
// `*` takes `/` too (fnmatch): `sub/params.json` is a `*.json`; `sub/dir/` is made for no file, so not at all.
const tokenizer = { allowPatterns: ['*.json'], ignorePatterns: ['tokenizer_config.json'] };
const selected = ['config.json', 'sub/params.json', 'tokenizer.json'];
const unselected = files.filter((file) => !selected.includes(file));
const none = { allowPatterns: ['*.gguf'] };

/** The files and dirs of a model dir but its marker. */
const modelFiles = async (dir: string): Promise<string[]> =>
  (await listTree(dir)).filter((file) => !file.startsWith('SUCCESS.'));

/** The markers (`SUCCESS.*`) of a model dir. */
const markers = async (dir: string): Promise<string[]> =>
  (await listTree(dir)).filter((file) => file.startsWith('SUCCESS.'));

describe.each(stores)('allowPatterns and ignorePatterns on $name, on the real process', (store) => {
  const model = (modelName: string, storageUri: string, patterns: object = {}): ModelEntry => ({
    modelName,
    modelSpec: { storageUri, ...patterns },
  });
  /** The files of model `prefix` the store was asked about by name (their metadata, bytes or resolve). */
  const asked = (reach: StoreReach, prefix: string, among: ReadonlyArray<string>): string[] =>
    among.filter((file) => reach.requestsFor(prefix, file).length > 0);

  beforeAll(async () => {
    await Promise.all(['llm', 'full', 'bare'].map((prefix) => store.put(prefix, llm(prefix))));
  });

  it('lands only the files the patterns select, loads the model and never asks the store for the others', async () => {
    const reach = await store.reach();
    const run = await runs.start(tmp.path, reach, [model('tok', reach.uri('llm'), tokenizer)]);

    await run.loaded('tok');

    const dir = join(run.modelDir, 'tok');
    expect(await modelFiles(dir)).toEqual(['config.json', 'sub/', 'sub/params.json', 'tokenizer.json']);
    expect(await markers(dir)).toHaveLength(1);
    for (const file of selected) expect(await readFile(join(dir, file), 'utf8')).toBe(llm('llm')[file]);
    expect(run.standIn.loads.filter((load) => load.name === 'tok')).toEqual([
      expect.objectContaining({ status: 200, complete: true }),
    ]);
    // Each selected file was asked for, and no request named any other: the selection came from the listing.
    expect(asked(reach, 'llm', selected)).toEqual(selected);
    expect(asked(reach, 'llm', unselected)).toEqual([]);
    expect(run.cli.otherLines).toEqual([]);
  });

  it('fails a model for good when its patterns select nothing, naming them, and unloads nothing', async () => {
    const reach = await store.reach();
    const models = [
      model('tok', reach.uri('llm'), tokenizer),
      model('other', reach.uri('full')),
      model('none', reach.uri('bare'), none),
    ];
    const run = await runs.start(tmp.path, reach, models);

    await Promise.all([run.loaded('tok'), run.loaded('other')]);
    const failed = await run.failed('none');

    // The reason names the URI, the patterns and how many files they chose from, in every store's words alike.
    const namesPatterns = (reason: unknown, uri: string): void => {
      expect(reason).toEqual(expect.stringContaining(uri));
      expect(reason).toEqual(
        expect.stringMatching(/the patterns allow=\["\*\.gguf"\] ignore=\[\] select none of its \d+ /),
      );
    };
    expect(failed).toMatchObject({ phase: 'Failed', errorKind: 'not-found' });
    namesPatterns(failed['reason'], reach.uri('bare'));
    expect(asked(reach, 'bare', files)).toEqual([]);
    expect(await modelFiles(join(run.modelDir, 'other'))).toEqual([...files, 'sub/', 'sub/dir/'].sort());

    // The loaded `tok` edited to a selection of none: it fails too, and the version in place stays served.
    const since = run.cli.logs.length;
    const namedBefore = files.map((file) => reach.requestsFor('llm', file).length);
    run.write([model('tok', reach.uri('llm'), none), ...models.slice(1)]);
    const edited = await run.failed('tok', since);

    expect(edited).toMatchObject({ phase: 'Failed', errorKind: 'not-found' });
    namesPatterns(edited['reason'], reach.uri('llm'));
    expect(files.map((file) => reach.requestsFor('llm', file).length)).toEqual(namedBefore);
    expect(run.standIn.requests.filter((request) => request.path.endsWith('/unload'))).toEqual([]);
    expect([...run.standIn.loaded].sort()).toEqual(['other', 'tok']);
    expect(await modelFiles(join(run.modelDir, 'tok'))).toEqual([
      'config.json',
      'sub/',
      'sub/params.json',
      'tokenizer.json',
    ]);
    expect(run.standIn.loads.map((load) => load.name).sort()).toEqual(['other', 'tok']);
    expect(run.cli.logs.slice(since).filter((log) => log['model'] === 'other')).toEqual([]);
  });
});
