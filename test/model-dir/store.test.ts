/** Tests of modelDirStore against real temp dirs: staged installs, markers, removal and start-up recovery. */
import { createHash } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { permanentError } from '../../src/core/errors';
import type { ModelSpec } from '../../src/core/model-config';
import { specEquals, specToJson, type Snapshot } from '../../src/core/snapshot';
import { modelDirStore } from '../../src/model-dir/store';
import type { ModelFiles } from '../../src/ports';
import { makeFifo, makeSentinel, type Sentinel } from '../hardening/neighbour/sentinel';
import { writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { atLevel } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { install } from '../helpers/install';

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const specA = spec('s3://models/model1', '100Mi');
const specB = spec('s3://models/model1-v2', '100Mi');
// What the marker name hashes for specA: storageUri, framework ('' when unset) and memory as an exact value.
const markerA = `SUCCESS.${sha256('["s3://models/model1","sklearn","104857600/1"]')}`;
const jsonA = '{"storageUri":"s3://models/model1","framework":"sklearn","memory":"100Mi"}';

const tmp = useTempDir('model-dir');
let root: string;
let lines: LogLine[];
let store: ReturnType<typeof modelDirStore>;

// Each store logs into the lines of the test that made it: a background flush of an earlier test's store that
// ends late (its temp dir already gone) must not show up in the next test's lines.
const newStore = (dir = root): ReturnType<typeof modelDirStore> => {
  const own = lines;
  return modelDirStore({
    root: dir,
    log: pino({ level: 'debug' }, { write: (line: string) => void own.push(JSON.parse(line) as LogLine) }),
  });
};

/** A fill that writes `files` into the staging dir it is given. */
const writeModel =
  (files: Readonly<Record<string, string>>) =>
  (dir: string): Promise<void> =>
    writeFiles(dir, files);

const live = (): AbortSignal => new AbortController().signal;
const entries = async (dir = root): Promise<string[]> => (await readdir(dir)).sort();
const asJson = (snapshot: Snapshot): Record<string, unknown> =>
  Object.fromEntries([...snapshot].map(([model, modelSpec]) => [model, specToJson(modelSpec)]));
/** What a fresh store on `dir` finds installed: the store's one way of telling what is on disk. */
const inPlace = (dir = root): Promise<Snapshot> => newStore(dir).recover();

/** A model dir as KServe leaves it: files and a marker whose hash we cannot reproduce. */
const kserveModel = async (model: string, marker: string | undefined, files: Record<string, string> = {}) => {
  await mkdir(join(root, model), { recursive: true });
  await writeModel(files)(join(root, model));
  if (marker !== undefined) await writeFile(join(root, model, `SUCCESS.${sha256(model)}`), marker);
};

beforeEach(async () => {
  root = join(tmp.path, 'models');
  await mkdir(root);
  lines = [];
  store = newStore();
});

describe('modelDirStore install', () => {
  it('makes the files and the marker visible only when it resolves', async () => {
    const target = join(root, 'model1');
    let seenDuringFill: boolean | undefined;
    await install(
      store,
      name('model1'),
      specA,
      async (dir, signal) => {
        await writeModel({ 'model.pt': 'weights', 'sub/config.json': '{}' })(dir);
        seenDuringFill = existsSync(target);
        expect(signal.aborted).toBe(false);
      },
      live(),
    );
    expect(seenDuringFill).toBe(false);
    expect(await readFile(join(target, 'model.pt'), 'utf8')).toBe('weights');
    expect(await readFile(join(target, 'sub/config.json'), 'utf8')).toBe('{}');
    expect(await entries(target)).toEqual([markerA, 'model.pt', 'sub'].sort());
    expect(await entries()).toEqual(['model1']);
  });

  it('swaps the dir in only once what the commit waits for resolved; its failure leaves nothing behind', async () => {
    const target = join(root, 'model1');
    const staged = await store.stage(name('model1'), specA, live());
    await writeModel({ 'model.pt': 'weights' })(staged.dir);
    let record!: () => void;
    const committed = staged.commit(new Promise<void>((resolve) => (record = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(target)).toBe(false);
    record();
    await committed;
    expect(await entries(target)).toEqual([markerA, 'model.pt'].sort());

    const refused = await store.stage(name('model2'), specA, live());
    await writeModel({ 'model.pt': 'weights' })(refused.dir);
    const failure = new Error('the journal cannot be written');
    await expect(refused.commit(Promise.reject(failure))).rejects.toThrow('the journal cannot be written');
    expect(await entries()).toEqual(['model1']);
  });

  it('names the marker after the hash of the spec identity and writes the KServe JSON and the manifest into it', async () => {
    await install(
      store,
      name('model1'),
      specA,
      writeModel({ 'model.pt': 'weights', 'v1/config.json': '{}' }),
      live(),
    );
    expect(await readFile(join(root, 'model1', markerA), 'utf8')).toBe(
      `${jsonA.slice(0, -1)},"modelsyncFiles":{"model.pt":7,"v1/config.json":2}}`,
    );
  });

  it("shows the server's vet every file, readable, before the marker; its refusal installs nothing and leaves no staging dir", async () => {
    const seen: Array<[string, number, string]> = [];
    const vet = async (files: ModelFiles): Promise<void> => {
      for (const [path, size] of files.sizes)
        seen.push([path, size, (await files.read(path, 1024)).toString('utf8')]);
      expect(await readdir(join(root))).not.toContain('model1');
    };
    const staged = await store.stage(name('model1'), specA, live());
    await writeModel({ 'model.pt': 'weights', 'sub/model-settings.json': '{}' })(staged.dir);
    await staged.commit(undefined, undefined, vet);
    expect(seen.sort()).toEqual([
      ['model.pt', 7, 'weights'],
      ['sub/model-settings.json', 2, '{}'],
    ]);
    expect(await entries(join(root, 'model1'))).toEqual([markerA, 'model.pt', 'sub'].sort());

    const refused = await store.stage(name('model2'), specA, live());
    await writeModel({ 'model.pt': 'weights' })(refused.dir);
    const refusal = permanentError('refused', 'these files would be served as another model');
    await expect(refused.commit(undefined, undefined, () => Promise.reject(refusal))).rejects.toBe(refusal);
    expect(await entries()).toEqual(['model1']);
  });

  it('takes the manifest from the files the fill says it wrote, when it says', async () => {
    // What the fill says is the manifest as it is: the commit does not list the dir (the extra file is left out).
    await install(
      store,
      name('model1'),
      specA,
      async (dir) => {
        await writeModel({ 'model.pt': 'weights', 'unsaid.txt': 'x' })(dir);
        return new Map([['model.pt', 7]]);
      },
      live(),
    );
    expect(await readFile(join(root, 'model1', markerA), 'utf8')).toBe(
      `${jsonA.slice(0, -1)},"modelsyncFiles":{"model.pt":7}}`,
    );
    expect(asJson(await newStore().recover())).toEqual({ model1: specToJson(specA) });
  });

  it('lists the dir when a file the fill says it wrote is named like a marker or lies below the top level', async () => {
    // Each fill also writes a file it does not tell: only a listing puts it in the manifest.
    const fill = (files: Readonly<Record<string, string>>) => async (dir: string) => {
      await writeModel({ ...files, 'unsaid.txt': 'x' })(dir);
      return new Map(Object.entries(files).map(([file, text]) => [file, text.length]));
    };
    await install(store, name('model1'), specA, fill({ 'model.pt': 'w', 'SUCCESS.abc': '{}' }), live());
    expect(await entries(join(root, 'model1'))).toEqual([markerA, 'model.pt', 'unsaid.txt'].sort());
    expect(lines.filter(atLevel('warn'))).toEqual([
      expect.objectContaining({ model: 'model1', entries: ['SUCCESS.abc'] }),
    ]);
    await install(store, name('model2'), specA, fill({ 'sub/config.json': '{}' }), live());
    expect(await readFile(join(root, 'model2', markerA), 'utf8')).toBe(
      `${jsonA.slice(0, -1)},"modelsyncFiles":{"sub/config.json":2,"unsaid.txt":1}}`,
    );
  });

  it('writes the marker readable by its owner alone: its storage URI may carry a SAS or a signature, and the model server (another user) shares the dir', async () => {
    const signed = spec(
      'https://acct.blob.core.windows.net/models/m1?sv=2024-08-04&sp=rwl&sig=c2VjcmV0',
      '100Mi',
    );
    await install(store, name('model1'), signed, writeModel({ 'model.pt': 'w' }), live());
    const marker = (await readdir(join(root, 'model1'))).find((entry) => entry.startsWith('SUCCESS.'))!;
    expect((await stat(join(root, 'model1', marker))).mode & 0o777).toBe(0o600);
    expect((await stat(join(root, 'model1', 'model.pt'))).mode & 0o044).toBe(0o044);
  });

  it('makes a marker an older modelsync or KServe wrote 0644 readable by its owner alone at recovery, leaving the files readable by all', async () => {
    // Markers were written 0644 until e7aa873: after an upgrade over the same model dir (an emptyDir the pod
    // keeps), the storage URI of every model already there stayed readable by the model server.
    const signed = spec(
      'https://acct.blob.core.windows.net/models/m1?sv=2024-08-04&sp=rwl&sig=c2VjcmV0',
      '100Mi',
    );
    await install(store, name('model1'), signed, writeModel({ 'model.pt': 'w' }), live());
    const marker = join(
      root,
      'model1',
      (await readdir(join(root, 'model1'))).find((e) => e.startsWith('SUCCESS.'))!,
    );
    await fsPromises.chmod(marker, 0o644);
    await kserveModel('model2', jsonA, { 'model.pt': 'w' });
    const kserveMarker = join(root, 'model2', `SUCCESS.${sha256('model2')}`);
    await fsPromises.chmod(kserveMarker, 0o644);
    // Readable by its owner alone already: left as it is.
    await kserveModel('model3', jsonA, { 'model.pt': 'w' });
    const ownerOnly = join(root, 'model3', `SUCCESS.${sha256('model3')}`);
    await fsPromises.chmod(ownerOnly, 0o400);
    expect([...(await newStore().recover()).keys()]).toEqual(['model1', 'model2', 'model3']);
    expect((await stat(ownerOnly)).mode & 0o777).toBe(0o400);
    expect((await stat(marker)).mode & 0o777).toBe(0o600);
    expect((await stat(kserveMarker)).mode & 0o777).toBe(0o600);
    expect((await stat(join(root, 'model1', 'model.pt'))).mode & 0o044).toBe(0o044);
    // One line for all of them, however many an upgrade finds; none at the next start.
    const told = (msg: string) => lines.filter((line) => line.msg.startsWith(msg));
    expect(told('markers readable by all').map((line) => line['markers'])).toEqual([2]);
    lines.length = 0;
    await newStore().recover();
    expect(told('markers readable by all')).toEqual([]);
  });

  // The model server can rename entries of the model dir (an emptyDir is 0777): as another user too.
  it('makes no marker outside 0600 through a model dir the model server swapped for a link while it was recovered', async () => {
    await kserveModel('model1', jsonA, { 'model.pt': 'w' });
    const markerName = `SUCCESS.${sha256('model1')}`;
    await fsPromises.chmod(join(root, 'model1', markerName), 0o644);
    const outside = join(tmp.path, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, markerName), 'theirs', { mode: 0o644 });
    await fsPromises.chmod(join(outside, markerName), 0o644);
    const open = fsPromises.open.bind(fsPromises);
    let swapped = false;
    // Once the marker was read as valid, just before it is opened to be made 0600.
    const opening = jest.spyOn(fsPromises, 'open').mockImplementation((async (
      path: string,
      flags: number,
    ) => {
      if (!swapped && String(path).endsWith(markerName) && (flags & constants.O_NOCTTY) !== 0) {
        swapped = true;
        await fsPromises.rename(join(root, 'model1'), join(root, 'moved'));
        await fsPromises.symlink(outside, join(root, 'model1'));
      }
      return open(path, flags);
    }) as never);
    try {
      await newStore().recover();
    } finally {
      opening.mockRestore();
    }
    expect(swapped).toBe(true);
    expect((await stat(join(outside, markerName))).mode & 0o777).toBe(0o644);
  });

  it('keeps the models whose markers cannot be made 0600 (a read-only volume), saying so in one warn for all', async () => {
    await kserveModel('model1', jsonA, { 'model.pt': 'w' });
    await kserveModel('model2', jsonA, { 'model.pt': 'w' });
    const erofs = Object.assign(new Error('EROFS: read-only file system, fchmod'), { code: 'EROFS' });
    const open = fsPromises.open.bind(fsPromises);
    const opening = jest.spyOn(fsPromises, 'open').mockImplementation((async (
      path: string,
      flags: number,
    ) => {
      const handle = await open(path, flags);
      if (String(path).includes('/SUCCESS.')) handle.chmod = () => Promise.reject(erofs);
      return handle;
    }) as never);
    try {
      expect([...(await newStore().recover()).keys()]).toEqual(['model1', 'model2']);
    } finally {
      opening.mockRestore();
    }
    expect(lines.filter(atLevel('warn')).map((line) => [line.msg, line['markers']])).toEqual([
      [
        "cannot make markers readable by modelsync's user alone: their storage URIs stay readable by the model server",
        2,
      ],
    ]);
    expect(await entries()).toEqual(['model1', 'model2']);
  });

  it('logs an installed or recovered model with its storage URI without a query, even after a space in its path', async () => {
    // The log's text redaction finds a URL up to a space only: the query after one showed whole.
    const spaced = spec(
      'https://models.example.com/my models/m1.bin?X-Custom-Token=c0ffee-t0ken-value',
      '100Mi',
    );
    await install(store, name('model1'), spaced, writeModel({ 'm1.bin': 'w' }), live());
    await newStore().recover();
    const logged = lines.filter((line) => ['model dir installed', 'model recovered'].includes(line.msg));
    expect(logged.map((line) => line.msg)).toEqual(['model dir installed', 'model recovered']);
    for (const line of logged)
      expect(line['spec']).toMatchObject({ storageUri: 'https://models.example.com/my models/m1.bin' });
  });

  it('gives the model dir mode 0755 so a model server running as another user can read it', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    expect((await stat(join(root, 'model1'))).mode & 0o777).toBe(0o755);
  });

  it('passes the fill a handle path to an empty dir next to the model dir, with a name no model can have', async () => {
    let staging = '';
    await install(
      store,
      name('model1'),
      specA,
      async (dir) => {
        expect(dir).toMatch(/^\/proc\/self\/fd\/\d+$/);
        staging = await realpath(dir);
        expect(await readdir(dir)).toEqual([]);
      },
      live(),
    );
    expect(join(staging, '..')).toBe(root);
    expect(staging.slice(root.length + 1)).toMatch(/^\.tmp-model1-/);
  });

  it('keeps the replaced version aside until dropReplaced', async () => {
    await install(store, name('model1'), specA, writeModel({ 'old.pt': 'old' }), live());
    const installed = await install(store, name('model1'), specB, writeModel({ 'new.pt': 'new' }), live());
    expect((await entries(join(root, 'model1'))).filter((f) => !f.startsWith('SUCCESS.'))).toEqual([
      'new.pt',
    ]);
    const aside = (await entries()).filter((f) => f.startsWith('.old-model1-'));
    expect(aside).toHaveLength(1);
    expect(await readFile(join(root, aside[0]!, 'old.pt'), 'utf8')).toBe('old');
    await installed.dropReplaced();
    expect(await entries()).toEqual(['model1']);
    await installed.dropReplaced(); // idempotent
    expect(asJson(await inPlace())).toEqual({ model1: specToJson(specB) });
  });

  it('returns a dropReplaced that does nothing when there was no previous version', async () => {
    const installed = await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    await installed.dropReplaced();
    expect(await entries()).toEqual(['model1']);
  });

  it('rejects with the EffectError of the fill and leaves no staging dir and no model dir', async () => {
    const failure = permanentError('not-found', 's3 returned HTTP 404');
    const installing = install(
      store,
      name('model1'),
      specA,
      async (dir) => {
        await writeModel({ 'part.pt': 'half' })(dir);
        throw failure;
      },
      live(),
    );
    await expect(installing).rejects.toBe(failure);
    expect(await entries()).toEqual([]);
  });

  it('leaves the installed version alone when the fill of a new one fails', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'v1' }), live());
    const failing = install(store, name('model1'), specB, () => Promise.reject(new Error('boom')), live());
    await expect(failing).rejects.toThrow('boom');
    expect(await entries()).toEqual(['model1']);
    expect(await readFile(join(root, 'model1', 'model.pt'), 'utf8')).toBe('v1');
    expect(asJson(await inPlace())).toEqual({ model1: specToJson(specA) });
  });

  it('turns a full disk in the fill into a retryable EffectError naming the staging dir', async () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const installing = install(store, name('model1'), specA, () => Promise.reject(enospc), live());
    await expect(installing).rejects.toMatchObject({
      name: 'EffectError',
      kind: 'filesystem',
      retryable: true,
      cause: enospc,
    });
    await expect(installing).rejects.toThrow(join(root, '.tmp-model1-'));
    expect(await entries()).toEqual([]);
  });

  it('rejects with a permanent EffectError naming the path when the model dir cannot be created', async () => {
    await writeFile(join(tmp.path, 'file'), '');
    const blocked = newStore(join(tmp.path, 'file', 'models'));
    const installing = install(blocked, name('model1'), specA, writeModel({}), live());
    await expect(installing).rejects.toMatchObject({
      name: 'EffectError',
      kind: 'filesystem',
      retryable: false,
    });
    await expect(installing).rejects.toThrow(join(tmp.path, 'file', 'models'));
  });

  it('rejects and cleans up when the signal aborts during the fill', async () => {
    const controller = new AbortController();
    const installing = install(
      store,
      name('model1'),
      specA,
      async (dir, signal) => {
        await writeModel({ 'part.pt': 'half' })(dir);
        controller.abort();
        signal.throwIfAborted();
      },
      controller.signal,
    );
    await expect(installing).rejects.toMatchObject({ name: 'AbortError' });
    expect(await entries()).toEqual([]);
  });

  it('rejects and cleans up when the signal aborts after a fill that ignores it', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'v1' }), live());
    const controller = new AbortController();
    const installing = install(
      store,
      name('model1'),
      specB,
      async (dir) => {
        await writeModel({ 'model.pt': 'v2' })(dir);
        controller.abort();
      },
      controller.signal,
    );
    await expect(installing).rejects.toMatchObject({ name: 'AbortError' });
    expect(await entries()).toEqual(['model1']);
    expect(await readFile(join(root, 'model1', 'model.pt'), 'utf8')).toBe('v1');
  });

  it('does not call the fill when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const fill = jest.fn(() => Promise.resolve());
    await expect(install(store, name('model1'), specA, fill, controller.signal)).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(fill).not.toHaveBeenCalled();
    expect(await entries()).toEqual([]);
  });

  it('installs a model whose name has the maximum 255 bytes', async () => {
    const long = 'é'.repeat(127) + 'x';
    await install(store, name(long), specA, writeModel({ 'model.pt': 'w' }), live());
    expect(await entries()).toEqual([long]);
  });

  it('keeps across a restart a model whose file list alone is past what a marker may hold (100,000 files of long paths)', async () => {
    // 5,400 files whose paths are 3 KiB long list 17 MB, as 100,000 files of 170-character paths do (a local
    // or pvc:// model has no file cap); recovery reads no marker past 16 MiB.
    const deep = Array.from({ length: 12 }, (_, i) => `${i}`.padEnd(250, 'd')).join('/');
    const files = new Map(
      Array.from({ length: 5400 }, (_, i) => [`${deep}/${String(i).padEnd(200, 'f')}`, 1] as const),
    );
    await install(
      store,
      name('model1'),
      specA,
      async (dir) => {
        await mkdir(join(dir, deep), { recursive: true });
        await Promise.all([...files.keys()].map((path) => writeFile(join(dir, path), 'x')));
        return files;
      },
      live(),
    );
    expect(asJson(await inPlace())).toEqual({ model1: specToJson(specA) });
    expect(lines.filter(atLevel('warn')).map((line) => line.msg)).toEqual([]);
    expect((await readdir(join(root, 'model1'))).sort()).toEqual([deep.split('/')[0], markerA]);
  });

  it('never puts two model names in one dir: a name with a lone surrogate (U+FFFD on disk) is refused', async () => {
    await install(store, name('a\uFFFD'), specA, writeModel({ 'model.pt': 'a' }), live());
    const fill = jest.fn(() => Promise.resolve());
    await expect(install(store, name('a\uD800'), specB, fill, live())).rejects.toMatchObject({
      kind: 'refused',
      retryable: false,
    });
    expect(fill).not.toHaveBeenCalled();
    expect(asJson(await inPlace())).toEqual({ 'a\uFFFD': specToJson(specA) });
  });

  it('creates the model dir when it is missing', async () => {
    const fresh = newStore(join(tmp.path, 'new', 'models'));
    await install(fresh, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    expect(asJson(await inPlace(join(tmp.path, 'new', 'models')))).toEqual({ model1: specToJson(specA) });
  });

  it.each(['..', '../escape', 'a/b', '.hidden', ''])('refuses the model name %j', async (bad) => {
    const fill = jest.fn(() => Promise.resolve());
    await expect(install(store, name(bad), specA, fill, live())).rejects.toMatchObject({
      kind: 'refused',
      retryable: false,
    });
    expect(fill).not.toHaveBeenCalled();
    expect(await entries()).toEqual([]);
  });
});

describe('modelDirStore: what a fresh store recovers after an install', () => {
  const installed = spec('s3://models/model1', '1Gi');
  beforeEach(async () => {
    await install(store, name('model1'), installed, writeModel({ 'm.pt': 'w' }), live());
  });

  const recoveredSpec = async (model: string, dir = root): Promise<ModelSpec | undefined> =>
    (await inPlace(dir)).get(name(model));

  it('is the installed spec', async () => {
    expect(asJson(await inPlace())).toEqual({ model1: specToJson(installed) });
  });

  it('equals a spec written differently (1024Mi for 1Gi)', async () => {
    const recovered = await recoveredSpec('model1');
    expect(recovered !== undefined && specEquals(recovered, spec('s3://models/model1', '1024Mi'))).toBe(true);
  });

  it.each([
    ['storageUri', spec('s3://models/other', '1Gi')],
    ['framework', spec('s3://models/model1', '1Gi', 'onnx')],
    ['memory', spec('s3://models/model1', '2Gi')],
  ])('differs from a spec whose %s differs', async (_, other) => {
    const recovered = await recoveredSpec('model1');
    expect(recovered).toBeDefined();
    expect(specEquals(recovered!, other)).toBe(false);
  });

  it('holds no model that is not installed', async () => {
    expect(await recoveredSpec('model2')).toBeUndefined();
  });

  it('holds no dir without a marker', async () => {
    await kserveModel('partial', undefined, { 'model.pt': 'half' });
    expect(await recoveredSpec('partial')).toBeUndefined();
  });

  it('is empty when the model dir itself is missing', async () => {
    expect((await inPlace(join(tmp.path, 'nowhere'))).size).toBe(0);
  });

  it('holds a KServe marker (another hash) with its spec, equal to ours and to no other', async () => {
    await kserveModel(
      'kserve1',
      '{"storageUri":"s3://models/model1","framework":"sklearn","memory":"100Mi"}',
    );
    const recovered = await recoveredSpec('kserve1');
    expect(recovered !== undefined && specEquals(recovered, specA)).toBe(true);
    expect(recovered !== undefined && specEquals(recovered, specB)).toBe(false);
  });

  it('holds no model whose marker name is a directory', async () => {
    await mkdir(join(root, 'odd', markerA), { recursive: true });
    expect(await recoveredSpec('odd')).toBeUndefined();
  });
});

describe('modelDirStore remove', () => {
  it('deletes the model dir and leaves nothing aside', async () => {
    await install(store, name('model1'), specA, writeModel({ 'sub/m.pt': 'w' }), live());
    await install(store, name('model2'), specB, writeModel({ 'm.pt': 'w' }), live());
    await store.remove(name('model1'));
    expect(await entries()).toEqual(['model2']);
  });

  it('counts a missing model dir, or a missing root, as done', async () => {
    await expect(store.remove(name('model1'))).resolves.toBeUndefined();
    await expect(newStore(join(tmp.path, 'nowhere')).remove(name('model1'))).resolves.toBeUndefined();
  });

  it.each(['..', '../outside', 'a/../../outside', '.', ''])(
    'refuses a name that is not a model dir inside M: %j',
    async (bad) => {
      await mkdir(join(tmp.path, 'outside'));
      await expect(store.remove(name(bad))).rejects.toMatchObject({ kind: 'refused', retryable: false });
      expect(existsSync(join(tmp.path, 'outside'))).toBe(true);
      expect(existsSync(root)).toBe(true);
    },
  );
});

describe('modelDirStore recover', () => {
  const warnings = (): LogLine[] => lines.filter(atLevel('warn'));

  it('creates a missing model dir and reports no models', async () => {
    const nested = join(tmp.path, 'a', 'b', 'models');
    expect((await newStore(nested).recover()).size).toBe(0);
    expect((await stat(nested)).isDirectory()).toBe(true);
  });

  it('recovers the models it installed, with their specs', async () => {
    await install(store, name('model2'), specB, writeModel({ 'm.pt': 'w' }), live());
    await install(
      store,
      name('model1'),
      spec('s3://models/model1', '1Gi'),
      writeModel({ 'm.pt': 'w' }),
      live(),
    );
    const recovered = await newStore().recover();
    expect(asJson(recovered)).toEqual({
      model1: { storageUri: 's3://models/model1', framework: 'sklearn', memory: '1Gi' },
      model2: specToJson(specB),
    });
    expect([...recovered.keys()]).toEqual(['model1', 'model2']);
    expect(await entries()).toEqual(['model1', 'model2']);
  });

  it('recovers a model of 1,200 files (a manifest past 64 KiB in its marker) and deletes none of it', async () => {
    // A TF SavedModel sharded 1,200 ways: well within --max-model-files (10,000).
    const shards = Object.fromEntries(
      Array.from({ length: 1200 }, (_, i) => [
        `1/model.savedmodel/variables/variables.data-${String(i).padStart(5, '0')}-of-01200`,
        '',
      ]),
    );
    await install(store, name('model1'), specA, writeModel(shards), live());
    // Before a load of files it did not just install (a retry), the loader asks the store.
    expect(await store.isInstalled(name('model1'), specA)).toBe(true);
    expect(asJson(await newStore().recover())).toEqual({ model1: specToJson(specA) });
    expect(await readdir(join(root, 'model1', '1', 'model.savedmodel', 'variables'))).toHaveLength(1200);
  });

  it('recovers a KServe model dir whose marker hash is not ours', async () => {
    await kserveModel('model1', jsonA, { 'model.pt': 'w' });
    expect(asJson(await store.recover())).toEqual({ model1: specToJson(specA) });
    expect(await readFile(join(root, 'model1', 'model.pt'), 'utf8')).toBe('w');
  });

  it('deletes staging and aside leftovers', async () => {
    await kserveModel('.tmp-model1-abc123', jsonA, { 'model.pt': 'w' });
    await kserveModel('.old-model1-abc123', jsonA, { 'model.pt': 'w' });
    await writeFile(join(root, '.tmp-x'), '');
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
  });

  it('deletes a model dir without a marker (an interrupted download)', async () => {
    await kserveModel('partial', undefined, { 'model.pt': 'half' });
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
  });

  it('does not count a marker nested below the model dir, nor a directory named like a marker', async () => {
    await kserveModel('nested', undefined, { [`sub/SUCCESS.${sha256('x')}`]: jsonA });
    await mkdir(join(root, 'dirmarker', markerA), { recursive: true });
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
  });

  it('deletes a model dir with a corrupt marker (W0), logs one warn naming it and recovers the others', async () => {
    await kserveModel('bad-model', '{', { 'model.pt': 'w' });
    await kserveModel('model1', jsonA);
    await kserveModel('model2', '{"storageUri":"s3://models/model2","framework":"sklearn","memory":"100Mi"}');
    const recovered = await store.recover();
    expect([...recovered.keys()]).toEqual(['model1', 'model2']);
    expect(await entries()).toEqual(['model1', 'model2']);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({
      msg: 'corrupt model marker; deleting the model dir',
      file: join(root, 'bad-model', `SUCCESS.${sha256('bad-model')}`),
      reason: expect.stringContaining('not JSON') as unknown,
    });
  });

  // A model dir another uid left (a volume kept across a change of runAsUser, OpenShift's uid range): its marker is
  // 0600 and not ours to read. That says nothing of the marker: read as corrupt, the model dir was moved aside from
  // under the model server that served it, and its delete failed too, naming /proc/self/fd/<n>.
  it('leaves a model dir whose marker it may not read (EACCES), naming the marker, and recovers the others', async () => {
    await kserveModel('theirs', jsonA, { 'model.pt': 'w' });
    await kserveModel('model1', jsonA);
    const theirs = `SUCCESS.${sha256('theirs')}`;
    const realOpen = fsPromises.open;
    const opening = jest.spyOn(fsPromises, 'open').mockImplementation((path, ...rest) =>
      String(path).endsWith(`/${theirs}`)
        ? Promise.reject(
            Object.assign(new Error(`EACCES: permission denied, open '${String(path)}'`), {
              code: 'EACCES',
              syscall: 'open',
              path: String(path),
            }),
          )
        : realOpen(path, ...rest),
    );
    try {
      const recovered = await store.recover();
      expect([...recovered.keys()]).toEqual(['model1']);
    } finally {
      opening.mockRestore();
    }
    expect(await entries()).toEqual(['model1', 'theirs']);
    expect(await readFile(join(root, 'theirs', 'model.pt'), 'utf8')).toBe('w');
    expect(lines.filter((line) => /corrupt/.test(String(line.msg)))).toEqual([]);
    const left = lines.filter((line) => /leaving the model dir/.test(String(line.msg)));
    expect(left).toHaveLength(1);
    expect(left[0]).toMatchObject({
      file: join(root, 'theirs', theirs),
      reason: `EACCES: permission denied, open '${join(root, 'theirs', theirs)}'`,
    });
  });

  it('deletes a model dir with a marker that is JSON but not a spec', async () => {
    await kserveModel('model1', '{"framework":"sklearn"}');
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
    expect(warnings()[0]?.['reason']).toContain('storageUri');
  });

  it('deletes a model dir with two markers, as ambiguous', async () => {
    await kserveModel('model1', jsonA);
    await writeFile(join(root, 'model1', markerA), jsonA);
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
    expect(warnings()).toEqual([
      expect.objectContaining({ msg: 'model dir with several markers; deleting it' }),
    ]);
  });

  it('names a few of the markers of a dir a neighbour filled with them, and counts them all', async () => {
    // One line naming every one of a million planted markers was some 100 MB, all held in memory first.
    await kserveModel('model1', jsonA);
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) => writeFile(join(root, 'model1', `SUCCESS.${i}`), '')),
    );
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
    expect(warnings()).toEqual([
      expect.objectContaining({ msg: 'model dir with several markers; deleting it', markers: 1001 }),
    ]);
    expect(warnings()[0]?.['files']).toHaveLength(10);
  });

  it('leaves lost+found and dot entries alone, and removes files and symlinks squatting model names', async () => {
    await writeFile(join(root, 'README'), 'hello');
    await mkdir(join(root, 'lost+found', '#1234'), { recursive: true });
    await mkdir(join(root, '.cache'));
    await kserveModel('model1', jsonA);
    await symlink(join(root, 'model1'), join(root, 'link'));
    const recovered = await store.recover();
    expect([...recovered.keys()]).toEqual(['model1']);
    expect(await entries()).toEqual(['.cache', 'lost+found', 'model1']);
    expect(await entries(join(root, 'lost+found'))).toEqual(['#1234']);
    // Sorted: recovery reads entries concurrently.
    expect(
      warnings()
        .map((line) => [line.msg, line['path'], line['found']])
        .sort(),
    ).toEqual([
      ['not a model dir; removing it', join(root, 'README'), 'a regular file'],
      ['not a model dir; removing it', join(root, 'link'), 'a symlink'],
    ]);
  });

  it('leaves a dir whose name is not a model name alone and logs it', async () => {
    await kserveModel('back\\slash', jsonA);
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual(['back\\slash']);
    expect(warnings()).toEqual([
      expect.objectContaining({ msg: 'dir name is not a model name; leaving it' }),
    ]);
  });

  it('deletes a model dir whose marker is too large to be one', async () => {
    await kserveModel('model1', `${jsonA}${' '.repeat(16 * 1024 * 1024)}`);
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
    expect(warnings()[0]?.['reason']).toMatch(
      /^the marker \/\S+\/model1\/SUCCESS\.[0-9a-f]+ is \d+ bytes, over 16777216; it is not read$/,
    );
  });

  it('recovers the same snapshot again, deleting nothing more', async () => {
    await kserveModel('model1', jsonA);
    await kserveModel('partial', undefined, { 'model.pt': 'half' });
    await install(store, name('model2'), specB, writeModel({}), live());
    const first = asJson(await store.recover());
    const after = await entries();
    expect(asJson(await newStore().recover())).toEqual(first);
    expect(await entries()).toEqual(after);
    expect(after).toEqual(['model1', 'model2']);
  });
});

describe('modelDirStore against a hostile neighbour on the volume', () => {
  const warnings = (): LogLine[] => lines.filter(atLevel('warn'));
  let outside: Sentinel;
  beforeEach(async () => {
    outside = await makeSentinel(join(tmp.path, 'outside'));
  });

  it.each([
    ['a symlink to a dir outside', (path: string) => symlink(outside.dir, path)],
    ['a symlink to a file outside', (path: string) => symlink(join(outside.dir, 'victim'), path)],
    ['a regular file', (path: string) => writeFile(path, 'x')],
    ['a FIFO', makeFifo],
  ])('removes a model-name entry that is %s at recovery, with a warn naming it', async (_, plant) => {
    await plant(join(root, 'model1'));
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
    expect(warnings()).toEqual([
      expect.objectContaining({ msg: 'not a model dir; removing it', path: join(root, 'model1') }),
    ]);
    await outside.expectUntouched();
  });

  it('recovers a model named lost+found that a previous run installed', async () => {
    await install(store, name('lost+found'), specA, writeModel({ 'model.pt': 'w' }), live());
    expect(asJson(await newStore().recover())).toEqual({ 'lost+found': specToJson(specA) });
  });

  it("refuses, permanently, to install a model over the file system's lost+found, and leaves it as it was", async () => {
    await writeFiles(join(root, 'lost+found'), { '#1234': 'orphan inode' });
    const fill = jest.fn(() => Promise.resolve());
    await expect(install(store, name('lost+found'), specA, fill, live())).rejects.toMatchObject({
      kind: 'refused',
      retryable: false,
      message: expect.stringContaining('lost+found') as unknown,
    });
    expect(fill).not.toHaveBeenCalled();
    await store.remove(name('lost+found'));
    expect((await store.recover()).size).toBe(0);
    expect(await entries()).toEqual(['lost+found']);
    expect(await readFile(join(root, 'lost+found', '#1234'), 'utf8')).toBe('orphan inode');
  });

  it('drops a top-level SUCCESS.* entry the model brought, with a warn, so a restart recovers the model', async () => {
    await install(
      store,
      name('model1'),
      specA,
      writeModel({ 'model.pt': 'w', 'SUCCESS.abc': '{}', 'SUCCESS.dir/x': 'y', 'sub/SUCCESS.ok': 'kept' }),
      live(),
    );
    expect(await entries(join(root, 'model1'))).toEqual([markerA, 'model.pt', 'sub'].sort());
    expect(await readFile(join(root, 'model1', 'sub', 'SUCCESS.ok'), 'utf8')).toBe('kept');
    expect(warnings()).toEqual([
      expect.objectContaining({ model: 'model1', entries: ['SUCCESS.abc', 'SUCCESS.dir'] }),
    ]);
    expect(asJson(await newStore().recover())).toEqual({ model1: specToJson(specA) });
  });

  it('fails with a retryable error, leaving nothing behind, when a neighbour deletes the staging dir mid-fill', async () => {
    const installing = install(
      store,
      name('model1'),
      specA,
      async (dir) => {
        await rm(await realpath(dir), { recursive: true });
        await writeFile(join(dir, 'model.pt'), 'w');
      },
      live(),
    );
    await expect(installing).rejects.toMatchObject({ kind: 'filesystem', retryable: true });
    await expect(installing).rejects.toThrow(/staging dir .* was removed or replaced/);
    expect(await entries()).toEqual([]);
  });

  it.each(['open', 'readdir'] as const)(
    'removes a staging dir it made but could not %s (out of descriptors), saying why, and installs on the retry',
    async (call) => {
      const emfile = Object.assign(new Error(`EMFILE: too many open files, ${call}`), { code: 'EMFILE' });
      const original = fsPromises[call].bind(fsPromises) as (...args: unknown[]) => Promise<unknown>;
      // The staging dir's own open (O_DIRECTORY under M/.tmp-*), or any listing through a handle: only the staging
      // dir's is asked for while a model of an empty model dir is staged.
      const failing = (path: string, flags: unknown): boolean =>
        call === 'open'
          ? path.startsWith(join(root, '.tmp-')) &&
            typeof flags === 'number' &&
            (flags & constants.O_DIRECTORY) !== 0
          : path.startsWith('/proc/self/fd/');
      const spy = jest
        .spyOn(fsPromises, call)
        .mockImplementation(((path: string, flags: unknown) =>
          failing(String(path), flags) ? Promise.reject(emfile) : original(path, flags)) as never);
      try {
        const staging = store.stage(name('model1'), specA, live());
        await expect(staging).rejects.toMatchObject({ kind: 'filesystem', retryable: true, cause: emfile });
        // It blamed a neighbour ("removed or replaced by someone else").
        await expect(staging).rejects.toThrow(/cannot open the staging dir .*EMFILE/);
        // Left, each retry (the resync's, for as long as the fault lasts) left one more until the next start.
        expect(await entries()).toEqual([]);
      } finally {
        spy.mockRestore();
      }
      await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
      expect(await entries()).toEqual(['model1']);
    },
  );

  it('never writes through a staging dir a neighbour swapped for a symlink mid-fill, and installs nothing', async () => {
    const installing = install(
      store,
      name('model1'),
      specA,
      async (dir) => {
        const staging = await realpath(dir);
        await rename(staging, join(root, 'stolen'));
        await symlink(outside.dir, staging);
        await writeFile(join(dir, 'model.bin'), 'written by modelsync');
        await writeFile(join(dir, 'victim'), 'written by modelsync');
      },
      live(),
    );
    await expect(installing).rejects.toMatchObject({ kind: 'filesystem', retryable: true });
    await outside.expectUntouched();
    expect(await entries()).toEqual(['stolen']);
    expect((await lstat(join(root, 'stolen'))).isDirectory()).toBe(true);
    expect(warnings()).toEqual([]);
  });

  it('says a model dir replaced by a symlink to a copy of it is not installed, with a warn', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    expect(await store.isInstalled(name('model1'), specA)).toBe(true);
    expect(await store.isInstalled(name('model1'), specB)).toBe(false);
    await rename(join(root, 'model1'), join(tmp.path, 'copy'));
    await symlink(join(tmp.path, 'copy'), join(root, 'model1'));
    expect(await store.isInstalled(name('model1'), specA)).toBe(false);
    expect(warnings().map((line) => [line.msg, line['model'], line['found']])).toEqual([
      ['model dir is not as installed; it will be installed again', 'model1', 'the marker of another spec'],
      ['model dir is not as installed; it will be installed again', 'model1', 'a symlink'],
    ]);
  });

  it('says a model whose marker became a symlink or a FIFO is not installed, without hanging', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    await rm(join(root, 'model1', markerA));
    await symlink(join(outside.dir, 'SUCCESS.0000'), join(root, 'model1', markerA));
    expect(await store.isInstalled(name('model1'), specA)).toBe(false);
    await rm(join(root, 'model1', markerA));
    await makeFifo(join(root, 'model1', markerA));
    expect(await store.isInstalled(name('model1'), specA)).toBe(false);
    expect((await newStore().recover()).size).toBe(0);
    expect(await entries()).toEqual([]);
    await outside.expectUntouched();
  });

  it('leaves a model whose marker cannot be opened for a moment (out of descriptors) at recovery, never deleting it', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    const emfile = Object.assign(new Error('EMFILE: too many open files, open'), { code: 'EMFILE' });
    const open = fsPromises.open.bind(fsPromises);
    const opening = jest
      .spyOn(fsPromises, 'open')
      .mockImplementation(((path: string, flags: number) =>
        String(path).endsWith(`/${markerA}`) ? Promise.reject(emfile) : open(path, flags)) as never);
    try {
      // Read as a corrupt marker, the model dir was deleted: a complete model downloaded again at every such start.
      expect((await newStore().recover()).size).toBe(0);
      expect(await entries()).toEqual(['model1']);
      expect(lines.filter(atLevel('error')).map((line) => [line.msg, line['model']])).toEqual([
        ['cannot read a model dir; leaving it', 'model1'],
      ]);
    } finally {
      opening.mockRestore();
    }
    expect(asJson(await newStore().recover())).toEqual({ model1: specToJson(specA) });
  });

  it('unlinks a model dir replaced by a symlink on remove, leaving its target untouched', async () => {
    await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    await rm(join(root, 'model1'), { recursive: true });
    await symlink(outside.dir, join(root, 'model1'));
    await store.remove(name('model1'));
    expect(await entries()).toEqual([]);
    await outside.expectUntouched();
  });

  it('replaces a symlink found where the model dir goes, without following it', async () => {
    await symlink(outside.dir, join(root, 'model1'));
    const installed = await install(store, name('model1'), specA, writeModel({ 'model.pt': 'w' }), live());
    await installed.dropReplaced();
    expect((await lstat(join(root, 'model1'))).isDirectory()).toBe(true);
    expect(await entries()).toEqual(['model1']);
    await outside.expectUntouched();
  });
});
