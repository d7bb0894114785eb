/** Acceptance: the real agent process killed with SIGKILL at random moments of a 100-model sync, then restarted. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { create as createTar } from 'tar';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer } from '../../src/testing/http-server';
import { seededRandom } from '../../src/testing/seeded-random';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli, type CliFlags, type CliProcess } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';

/** The seed of every random choice below (kill times, number of runs, the run that changes the config). */
const seed = 0x6d73796e;

const between = (random: () => number, min: number, max: number): number =>
  min + Math.floor(random() * (max - min + 1));

/** A model version as stored: the URL path, how it is served, and the files it becomes in the model dir. */
interface StoredModel {
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
  /** Relative path in the model dir to content (directories implied). */
  readonly files: ReadonlyMap<string, Buffer>;
}

/** Even models are one 256 KiB file; odd ones a tar.gz of three files in two directories (random bytes). */
const storedModel = (scratch: string, name: string, version: string, index: number): StoredModel => {
  if (index % 2 === 0) {
    const body = randomBytes(256 * 1024);
    return {
      path: `/${version}/${name}/model.bin`,
      contentType: 'application/octet-stream',
      body,
      files: new Map([['model.bin', body]]),
    };
  }
  const files = new Map([
    ['config.json', Buffer.from(JSON.stringify({ name, version }))],
    ['weights/part-0.bin', randomBytes(96 * 1024)],
    ['weights/part-1.bin', randomBytes(96 * 1024)],
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

/** One GET the storage server answered (or started to), tagged with the agent run it came from. */
interface StorageGet {
  readonly path: string;
  readonly run: number;
}

/**
 * The storage: serves each model's bytes in two halves with a pause in between, so a kill often lands in the
 * middle of a body; records every GET with the agent run (`run`, set by the test before each spawn).
 */
const startStorage = async (models: ReadonlyMap<string, StoredModel>, pauseMs: number) => {
  const gets: StorageGet[] = [];
  const state = { run: 0 };
  const pauses = new Set<NodeJS.Timeout>();
  const server = await startHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://storage').pathname;
    const model = models.get(path);
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

/** What the model server was asked to load: the storageUri in the model's marker when the load arrived. */
const markerUri = async (dir: string): Promise<string | undefined> => {
  try {
    const markers = (await readdir(dir)).filter((entry) => entry.startsWith('SUCCESS.'));
    if (markers.length !== 1) return undefined;
    const spec = JSON.parse(await readFile(join(dir, markers[0]!), 'utf8')) as { storageUri?: string };
    return spec.storageUri;
  } catch {
    return undefined;
  }
};

const loadRoute = /^\/v2\/repository\/models\/([^/]+)\/load$/;

/**
 * A pass-through proxy in front of the model-server stand-in that knows which version the server serves: on
 * a successful load it records the storageUri of the marker present when the load arrived. Loads of a name in
 * `held` are never forwarded (the request hangs), which pins the moment between a swap and its load.
 */
const startServerProxy = async (target: string, modelDir: string) => {
  const serving = new Map<string, string | undefined>();
  const held = new Set<string>();
  const heldRequests: string[] = [];
  const server = await startHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://proxy').pathname;
    const match = loadRoute.exec(path);
    const name = match === null ? undefined : decodeURIComponent(match[1]!);
    if (name !== undefined && held.has(name)) {
      heldRequests.push(name);
      return;
    }
    const version = name === undefined ? Promise.resolve(undefined) : markerUri(join(modelDir, name));
    void version.then((uri) => {
      const upstream = request(
        `${target}${req.url ?? '/'}`,
        { method: req.method, headers: req.headers },
        (answer) => {
          if (name !== undefined && answer.statusCode === 200) serving.set(name, uri);
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
  });
  return { url: server.url, serving, held, heldRequests, close: server.close };
};

interface ModelEntry {
  readonly modelName: string;
  readonly modelSpec: { readonly storageUri: string; readonly framework: string; readonly memory: string };
}

/** Per model dir: its markers' storageUris and its other files (relative paths), read while no agent runs. */
const readModelDir = async (
  modelDir: string,
): Promise<{ entries: string[]; models: Map<string, { markers: string[]; files: Map<string, Buffer> }> }> => {
  const entries = (await readdir(modelDir)).sort();
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

let standIn: V2ModelServerStandIn | undefined;
let closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  await killAllCli();
  for (const close of closers.reverse()) await close();
  closers = [];
  await standIn?.close();
  standIn = undefined;
});
const tmp = useTempDir('crash');

/** The storage, model-server stand-in and proxy for `stored`, plus how to spawn the agent against them. */
const environment = async (stored: ReadonlyMap<string, StoredModel>, pauseMs: number) => {
  const configDir = join(tmp.path, 'configs');
  const modelDir = join(tmp.path, 'models');
  mkdirSync(modelDir);
  const byPath = new Map([...stored.values()].map((model) => [model.path, model]));
  const storage = await startStorage(byPath, pauseMs);
  closers.push(storage.close);
  standIn = await startV2ModelServer({ modelDir, loadDelayMs: 20 });
  const proxy = await startServerProxy(standIn.url, modelDir);
  closers.push(proxy.close);
  const flags: CliFlags = {
    'config-dir': configDir,
    'model-dir': modelDir,
    'server-url': proxy.url,
    'download-concurrency': 4,
    'load-concurrency': 2,
    'retry-base-ms': 20,
    'retry-max-ms': 200,
  };
  const entry = (name: string, version: string): ModelEntry => ({
    modelName: name,
    modelSpec: {
      storageUri: `${storage.url}${stored.get(`${name}@${version}`)!.path}`,
      framework: 'sklearn',
      memory: '64Mi',
    },
  });
  const writeConfig = (entries: ReadonlyArray<ModelEntry>): void => {
    atomicWrite(configDir, { 'models.json': JSON.stringify(entries) });
  };
  return { configDir, modelDir, storage, proxy, flags, entry, writeConfig };
};

/** Checks the model dir holds exactly `entries`, each with one marker naming its spec and exactly its files. */
const expectModelDirToHold = async (
  modelDir: string,
  entries: ReadonlyArray<ModelEntry>,
  stored: ReadonlyMap<string, StoredModel>,
): Promise<void> => {
  const onDisk = await readModelDir(modelDir);
  expect(onDisk.entries).toEqual(entries.map((e) => e.modelName).sort());
  for (const { modelName, modelSpec } of entries) {
    const found = onDisk.models.get(modelName)!;
    expect({ modelName, markers: found.markers }).toEqual({ modelName, markers: [modelSpec.storageUri] });
    const model = [...stored.values()].find((m) => modelSpec.storageUri.endsWith(m.path))!;
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

const modelCount = 100;
const names = Array.from({ length: modelCount }, (_, i) => `m${String(i).padStart(3, '0')}`);

describe('the agent process under kill -9 and restart', () => {
  it('ends with the configured models loaded, no load on incomplete files and no re-download when killed at random moments of a sync', async () => {
    const random = seededRandom(seed);
    const scratch = join(tmp.path, 'scratch');
    // Versions: v1 of every model (and of 5 added ones); v2 of the 5 whose spec changes mid-test.
    const added = Array.from({ length: 5 }, (_, i) => `m${String(modelCount + i).padStart(3, '0')}`);
    const removed = names.slice(10, 20);
    const changed = names.slice(40, 45);
    const stored = new Map<string, StoredModel>();
    [...names, ...added].forEach((name, i) => stored.set(`${name}@v1`, storedModel(scratch, name, 'v1', i)));
    changed.forEach((name) =>
      stored.set(`${name}@v2`, storedModel(scratch, name, 'v2', names.indexOf(name))),
    );
    // 100 downloads, 4 at a time, 200 ms each at least: a sync outlasts the time any run gets before its kill.
    const env = await environment(stored, 200);

    const initialConfig = names.map((name) => env.entry(name, 'v1'));
    const finalConfig = [
      ...names
        .filter((name) => !removed.includes(name))
        .map((n) => env.entry(n, changed.includes(n) ? 'v2' : 'v1')),
      ...added.map((name) => env.entry(name, 'v1')),
    ];
    env.writeConfig(initialConfig);

    const crashes = between(random, 5, 8);
    const changeRun = between(random, 1, crashes - 2);
    // storageUri path -> the first run that started with that version complete (marker) on disk.
    const completeFrom = new Map<string, number>();
    const runs: CliProcess[] = [];
    let restartsAfterKillMidDownload = 0;
    for (let run = 0; run <= crashes; run++) {
      const onDisk = await readModelDir(env.modelDir);
      if (onDisk.entries.some((entry) => entry.startsWith('.tmp-'))) restartsAfterKillMidDownload++;
      for (const [name, { markers }] of onDisk.models) {
        for (const uri of markers) {
          const path = new URL(uri).pathname;
          if (!completeFrom.has(path)) completeFrom.set(path, run);
          expect({ name, markers: markers.length }).toEqual({ name, markers: 1 });
        }
      }
      env.storage.state.run = run;
      const agent = startCli(cliArgs(env.flags));
      runs.push(agent);
      if (run === crashes) break;
      // Node needs a second or more to start on a busy machine: count the random time from the first log line.
      await agent.waitForLog(() => true, 30_000);
      if (run === changeRun) {
        // The config changes while this run syncs; the kill then lands somewhere in applying the change.
        await sleep(between(random, 100, 800));
        env.writeConfig(finalConfig);
      }
      await sleep(between(random, 100, 1500));
      expect(await agent.signalAndWait('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    }

    const final = runs[runs.length - 1]!;
    await final.waitForLog('start-up sync complete; ready', 90_000);
    const finalNames = finalConfig.map((e) => e.modelName).sort();
    const context = `seed ${seed}, ${crashes} crashes, config changed in run ${changeRun}`;

    expect({ context, loaded: [...standIn!.loaded].sort() }).toEqual({ context, loaded: finalNames });
    // The server serves the configured version of each model, not merely some version.
    const serving = Object.fromEntries(
      finalConfig.map((e) => [e.modelName, env.proxy.serving.get(e.modelName)]),
    );
    expect({ context, serving }).toEqual({
      context,
      serving: Object.fromEntries(finalConfig.map((e) => [e.modelName, e.modelSpec.storageUri])),
    });
    expect({ context, incompleteLoads: standIn!.loads.filter((l) => !l.complete) }).toEqual({
      context,
      incompleteLoads: [],
    });
    await expectModelDirToHold(env.modelDir, finalConfig, stored);
    const downloadedAgain = env.storage.gets.filter(
      (get) => get.run >= (completeFrom.get(get.path) ?? Infinity),
    );
    expect({ context, downloadedAgain }).toEqual({ context, downloadedAgain: [] });
    expect(final.logs.filter((log) => log.msg === 'model failed')).toEqual([]);
    expect(runs.flatMap((agent) => agent.otherLines)).toEqual([]);
    // Non-vacuity: kills interrupted downloads, and models were complete on disk at some restart.
    expect(restartsAfterKillMidDownload).toBeGreaterThan(0);
    expect(completeFrom.size).toBeGreaterThan(0);

    expect(await final.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
  }, 180_000);

  it('loads the new version when killed after a changed model was swapped in but before its load', async () => {
    const scratch = join(tmp.path, 'scratch');
    const stored = new Map<string, StoredModel>();
    ['a', 'b', 'c'].forEach((name, i) => stored.set(`${name}@v1`, storedModel(scratch, name, 'v1', i)));
    stored.set('b@v2', storedModel(scratch, 'b', 'v2', 1));
    const env = await environment(stored, 10);
    env.writeConfig(['a', 'b', 'c'].map((name) => env.entry(name, 'v1')));
    const first = startCli(cliArgs(env.flags));
    await first.waitForLog('start-up sync complete; ready', 60_000);
    expect(env.proxy.serving.get('b')).toBe(env.entry('b', 'v1').modelSpec.storageUri);

    // b changes; its load is held at the proxy, so the server still serves v1 when the agent dies.
    env.proxy.held.add('b');
    const next = [env.entry('a', 'v1'), env.entry('b', 'v2'), env.entry('c', 'v1')];
    const logsBefore = first.logs.length;
    env.writeConfig(next);
    await first.waitForLog((log) => log.msg === 'model loading' && log['model'] === 'b', 30_000, logsBefore);
    await waitFor(() => env.proxy.heldRequests.length > 0, 10_000, 'the load of b at the proxy');
    expect(env.proxy.heldRequests).toEqual(['b']);
    await first.signalAndWait('SIGKILL');
    env.proxy.held.clear();
    expect(await markerUri(join(env.modelDir, 'b'))).toBe(env.entry('b', 'v2').modelSpec.storageUri);

    const second = startCli(cliArgs(env.flags));
    await second.waitForLog('start-up sync complete; ready', 60_000);
    expect([...standIn!.loaded].sort()).toEqual(['a', 'b', 'c']);
    expect(env.proxy.serving.get('b')).toBe(env.entry('b', 'v2').modelSpec.storageUri);
    expect(standIn!.loads.filter((load) => !load.complete)).toEqual([]);
    await expectModelDirToHold(env.modelDir, next, stored);
  }, 120_000);
});
