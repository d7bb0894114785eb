/** The crash tests' world: model versions in an HTTP storage that pauses mid-body, the V2 stand-in checking every load against each version's manifest, and the real CLI to kill. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { create as createTar } from 'tar';
import { loadJournalFileName } from '../../../src/model-dir/load-journal';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startHttpServer } from '../../../src/testing/http-server';
import { manifestOf, type ModelManifest } from '../../../src/testing/model-manifest';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { waitFor } from '../../../src/testing/wait';
import { killAllCli, type CliFlags } from '../../helpers/cli-process';

/** A model version as stored: the URL path, how it is served, and the files it becomes in the model dir. */
export interface StoredModel {
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
  /** Relative path in the model dir to content (directories implied). */
  readonly files: ReadonlyMap<string, Buffer>;
}

/** Even-indexed models are one file of `bytes`; odd ones a tar.gz of three files in two dirs (random bytes). */
const makeStoredModel = (
  scratch: string,
  name: string,
  version: string,
  index: number,
  bytes: number,
): StoredModel => {
  if (index % 2 === 0) {
    const body = randomBytes(bytes);
    return {
      path: `/${version}/${name}/model.bin`,
      contentType: 'application/octet-stream',
      body,
      files: new Map([['model.bin', body]]),
    };
  }
  const files = new Map([
    ['config.json', Buffer.from(JSON.stringify({ name, version }))],
    ['weights/part-0.bin', randomBytes(Math.ceil(bytes / 3))],
    ['weights/part-1.bin', randomBytes(Math.ceil(bytes / 3))],
  ]);
  const source = join(scratch, `${name}-${version}`);
  for (const [file, content] of files) {
    mkdirSync(join(source, file, '..'), { recursive: true });
    writeFileSync(join(source, file), content);
  }
  const archive = join(scratch, `${name}-${version}.tar.gz`);
  createTar({ gzip: true, cwd: source, file: archive, sync: true, portable: true }, [
    'config.json',
    'weights',
  ]);
  return {
    path: `/${version}/${name}/model.tar.gz`,
    contentType: 'application/gzip',
    body: readFileSync(archive),
    files,
  };
};

/** Model versions made on first use, by `<name>@<version>`; a name's index decides its shape (file or archive). */
export interface ModelCatalog {
  readonly get: (name: string, version: string) => StoredModel;
  /** The version stored at a URL path, if one was made. */
  readonly byPath: (path: string) => StoredModel | undefined;
}

/** A catalog whose models are about `bytes` large, their archives built in `scratch`. */
export const modelCatalog = (
  scratch: string,
  indexOf: (name: string) => number,
  bytes = 256 * 1024,
): ModelCatalog => {
  const models = new Map<string, StoredModel>();
  const paths = new Map<string, StoredModel>();
  return {
    get: (name, version) => {
      const key = `${name}@${version}`;
      let model = models.get(key);
      if (model === undefined) {
        model = makeStoredModel(scratch, name, version, indexOf(name), bytes);
        models.set(key, model);
        paths.set(model.path, model);
      }
      return model;
    },
    byPath: (path) => paths.get(path),
  };
};

/** One GET the storage server answered (or started to), tagged with the agent run it came from. */
export interface StorageGet {
  readonly path: string;
  readonly run: number;
}

/**
 * The storage: serves each model's bytes in two halves with a pause in between, so a kill often lands in the
 * middle of a body; records every GET with the agent run (`state.run`, set by the test before each spawn).
 */
const startStorage = async (catalog: ModelCatalog, pauseMs: number) => {
  const gets: StorageGet[] = [];
  const state = { run: 0 };
  const pauses = new Set<NodeJS.Timeout>();
  const server = await startHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://storage').pathname;
    const model = catalog.byPath(path);
    if (req.method !== 'GET' || model === undefined) {
      res.writeHead(404).end();
      return;
    }
    gets.push({ path, run: state.run });
    const half = Math.floor(model.body.length / 2);
    res.writeHead(200, { 'Content-Type': model.contentType, 'Content-Length': model.body.length });
    res.write(model.body.subarray(0, half));
    const pause = setTimeout(() => {
      pauses.delete(pause);
      if (!res.destroyed) res.end(model.body.subarray(half));
    }, pauseMs);
    pauses.add(pause);
  });
  const close = async (): Promise<void> => {
    for (const pause of pauses) clearTimeout(pause);
    await server.close();
  };
  return { url: server.url, gets, state, close };
};

/** An entry of models.json. */
export interface ModelEntry {
  readonly modelName: string;
  readonly modelSpec: { readonly storageUri: string; readonly framework: string; readonly memory: string };
}

/** The storageUri in the one marker of `<modelDir>/<name>`, or undefined: safe to ask while an agent runs. */
export const markerUriOf = async (modelDir: string, name: string): Promise<string | undefined> => {
  try {
    const markers = (await readdir(join(modelDir, name))).filter((entry) => entry.startsWith('SUCCESS.'));
    if (markers.length !== 1) return undefined;
    const spec = JSON.parse(await readFile(join(modelDir, name, markers[0]!), 'utf8')) as {
      storageUri?: string;
    };
    return spec.storageUri;
  } catch {
    return undefined; // between the two renames of a swap, or mid-write
  }
};

/** What a model dir holds, read while no agent runs: its entries, and per model its markers' storageUris and files. */
export const readModelDir = async (
  modelDir: string,
): Promise<{ entries: string[]; models: Map<string, { markers: string[]; files: Map<string, Buffer> }> }> => {
  const entries = (await readdir(modelDir)).filter((entry) => entry !== loadJournalFileName).sort();
  const models = new Map<string, { markers: string[]; files: Map<string, Buffer> }>();
  for (const entry of entries) {
    if (entry.startsWith('.')) continue;
    const dir = join(modelDir, entry);
    const markers: string[] = [];
    const files = new Map<string, Buffer>();
    const walk = async (relative: string): Promise<void> => {
      for (const item of await readdir(join(dir, relative), { withFileTypes: true })) {
        const path = relative === '' ? item.name : `${relative}/${item.name}`;
        if (item.isDirectory()) await walk(path);
        else if (relative === '' && item.name.startsWith('SUCCESS.')) {
          const spec = JSON.parse(await readFile(join(dir, path), 'utf8')) as { storageUri: string };
          markers.push(spec.storageUri);
        } else files.set(path, await readFile(join(dir, path)));
      }
    };
    await walk('');
    models.set(entry, { markers, files });
  }
  return { entries, models };
};

/**
 * The storage and the model-server stand-in for `catalog` (its manifest check on), plus how to run the agent against
 * them: `flags` for `cliArgs` (with `serverUrl` in place of the stand-in's URL, e.g. a proxy), `entry` for a
 * models.json entry of a stored version, `writeConfig` for a kubelet-style swap of models.json.
 */
export const crashWorld = async (root: string, catalog: ModelCatalog, pauseMs: number) => {
  const configDir = join(root, 'configs');
  const modelDir = join(root, 'models');
  mkdirSync(modelDir);
  const storage = await startStorage(catalog, pauseMs);
  const manifests = new Map<string, ModelManifest>();
  const manifest = (version: string): ModelManifest | undefined => {
    const model = catalog.byPath(new URL(version).pathname);
    if (model !== undefined && !manifests.has(version)) manifests.set(version, manifestOf(model.files));
    return manifests.get(version);
  };
  const standIn: V2ModelServerStandIn = await startV2ModelServer({ modelDir, loadDelayMs: 20, manifest });
  const flags = (serverUrl = standIn.url): CliFlags => ({
    'config-dir': configDir,
    'model-dir': modelDir,
    'server-url': serverUrl,
    'download-concurrency': 4,
    'load-concurrency': 2,
    'retry-base-ms': 20,
    'retry-max-ms': 200,
  });
  const entry = (name: string, version: string): ModelEntry => ({
    modelName: name,
    modelSpec: {
      storageUri: `${storage.url}${catalog.get(name, version).path}`,
      framework: 'sklearn',
      memory: '64Mi',
    },
  });
  const writeConfig = (entries: ReadonlyArray<ModelEntry>): void => {
    atomicWrite(configDir, { 'models.json': JSON.stringify(entries) });
  };
  const close = async (): Promise<void> => {
    await storage.close();
    await standIn.close();
  };
  return { configDir, modelDir, storage, standIn, flags, entry, writeConfig, close };
};

/** What `crashWorld` gives. */
export type CrashWorld = Awaited<ReturnType<typeof crashWorld>>;

/**
 * Checks the model dir holds exactly `entries` (and the load journal: no staging or aside leftover), each with one
 * marker naming its spec and exactly the files of that version, byte for byte.
 */
export const expectModelDirToHold = async (
  modelDir: string,
  entries: ReadonlyArray<ModelEntry>,
  catalog: ModelCatalog,
): Promise<void> => {
  // A replaced version's dir (`.old-<name>-…`) is deleted just after its successor is reported Loaded, which the
  // start's Ready may precede: it is waited for, not taken for a leftover (CI once read the dir in between).
  await waitFor(
    async () => (await readdir(modelDir)).every((entry) => !entry.startsWith('.old-')),
    10_000,
    'the replaced versions to be deleted',
  ).catch(() => undefined);
  const onDisk = await readModelDir(modelDir);
  expect(onDisk.entries).toEqual(entries.map((e) => e.modelName).sort());
  for (const { modelName, modelSpec } of entries) {
    const found = onDisk.models.get(modelName)!;
    expect({ modelName, markers: found.markers }).toEqual({ modelName, markers: [modelSpec.storageUri] });
    const model = catalog.byPath(new URL(modelSpec.storageUri).pathname)!;
    expect({ modelName, files: [...found.files.keys()].sort() }).toEqual({
      modelName,
      files: [...model.files.keys()].sort(),
    });
    for (const [file, content] of model.files) {
      if (!found.files.get(file)!.equals(content))
        throw new Error(`${modelName}/${file} differs from storage`);
    }
  }
};

/** The version each model is served at: the marker's storageUri at its last successful load (the stand-in's record). */
export const servedVersions = (standIn: V2ModelServerStandIn): Map<string, string | undefined> => {
  const served = new Map<string, string | undefined>();
  for (const load of standIn.loads) if (load.status === 200) served.set(load.name, load.version);
  return served;
};

/**
 * For a test file: after each test, kills every CLI still running, then closes what `keep` was given (worlds,
 * proxies), last kept first. `keep` returns what it is given.
 */
export const useCrashWorlds = (): { keep: <T extends { close: () => Promise<void> }>(closable: T) => T } => {
  const kept: Array<{ close: () => Promise<void> }> = [];
  afterEach(async () => {
    await killAllCli();
    for (const closable of kept.splice(0).reverse()) await closable.close();
  });
  return {
    keep: (closable) => {
      kept.push(closable);
      return closable;
    },
  };
};
