/** Runs the whole agent (real config dir, model dir, HTTP storage server, V2 stand-in) in-process for acceptance tests. */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { either as E } from 'fp-ts';
import pino, { type Logger } from 'pino';
import type { Subscription } from 'rxjs';
import { create as tarCreate } from 'tar';
import * as yazl from 'yazl';
import { defaultAppConfig, type AppConfig } from '../../src/core/app-config';
import type { AgentEvent, ModelPhase, ModelStatus } from '../../src/core/model-status';
import type { Snapshot } from '../../src/core/snapshot';
import { configDirSource } from '../../src/edge/config-dir';
import type { Loader, RetryPolicy } from '../../src/loader/loader';
import type { ModelServer, ModelStore } from '../../src/ports';
import { agentSettings, capabilities } from '../../src/production';
import { startAgent } from '../../src/start-agent';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { LogSink } from './log-sink';
import { sleep, waitFor } from './pipeline-harness';

/** One request the storage server answered, and how. */
export interface StorageRequest {
  readonly path: string;
  readonly status: number;
  /** True when the body was cut off mid-stream on purpose. */
  readonly cut: boolean;
}

/** A node:http storage server on 127.0.0.1 serving in-memory bodies, with fault switches per path. */
export interface StorageServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: ReadonlyArray<StorageRequest>;
  /** How many requests `path` received. */
  requestsFor(path: string): number;
  /** Serves `body` at `path` with `contentType` (default text/plain). */
  file(path: string, body: string | Buffer, contentType?: string): void;
  /** Serves a tar.gz (built with `tar`) of `files` at `path`; returns its bytes. */
  tarGz(path: string, files: Readonly<Record<string, string>>, contentType?: string): Promise<Buffer>;
  /** Serves a zip (built with `yazl`) of `files` at `path`; returns its bytes. */
  zip(path: string, files: Readonly<Record<string, string>>, contentType?: string): Promise<Buffer>;
  /** The next `times` requests of `path` (default: all) answer `status` with a short text body. */
  fail(path: string, status: number, times?: number): void;
  /** The next `times` requests of `path` send the headers and half the body, then drop the connection. */
  cut(path: string, times: number): void;
  close(): Promise<void>;
}

interface Route {
  body: Buffer;
  contentType: string;
}

const collect = async (stream: AsyncIterable<unknown>): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
};

/** A tar.gz of `files` made by the `tar` package from a scratch dir. */
export const makeTarGz = async (files: Readonly<Record<string, string>>): Promise<Buffer> => {
  const scratch = await mkdtemp(join(tmpdir(), 'modelsync-tar-'));
  try {
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(scratch, path)), { recursive: true });
      await writeFile(join(scratch, path), content);
    }
    return await collect(tarCreate({ gzip: true, cwd: scratch, portable: true }, Object.keys(files)));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
};

/** A zip of `files` made by `yazl`. */
export const makeZip = async (files: Readonly<Record<string, string>>): Promise<Buffer> => {
  const zip = new yazl.ZipFile();
  for (const [path, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), path);
  zip.end();
  return collect(zip.outputStream);
};

export const startStorageServer = async (): Promise<StorageServer> => {
  const routes = new Map<string, Route>();
  const failures = new Map<string, { status: number; remaining: number }>();
  const cuts = new Map<string, number>();
  const requests: StorageRequest[] = [];

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://storage').pathname;
    const failure = failures.get(path);
    if (failure !== undefined && failure.remaining > 0) {
      failure.remaining -= 1;
      requests.push({ path, status: failure.status, cut: false });
      res.writeHead(failure.status, { 'content-type': 'text/plain' }).end(`injected ${failure.status}`);
      return;
    }
    const route = routes.get(path);
    if (route === undefined) {
      requests.push({ path, status: 404, cut: false });
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const headers = { 'content-type': route.contentType, 'content-length': route.body.length };
    const cutsLeft = cuts.get(path) ?? 0;
    if (cutsLeft > 0) {
      cuts.set(path, cutsLeft - 1);
      requests.push({ path, status: 200, cut: true });
      res.writeHead(200, headers);
      res.write(route.body.subarray(0, Math.floor(route.body.length / 2)), () => res.socket?.destroy());
      return;
    }
    requests.push({ path, status: 200, cut: false });
    res.writeHead(200, headers).end(route.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const serve = (path: string, body: Buffer, contentType: string): Buffer => {
    routes.set(path, { body, contentType });
    return body;
  };

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    requestsFor: (path) => requests.filter((r) => r.path === path).length,
    file: (path, body, contentType = 'text/plain') => void serve(path, Buffer.from(body), contentType),
    tarGz: async (path, files, contentType = 'application/gzip') =>
      serve(path, await makeTarGz(files), contentType),
    zip: async (path, files, contentType = 'application/zip') =>
      serve(path, await makeZip(files), contentType),
    fail: (path, status, times = Number.POSITIVE_INFINITY) =>
      void failures.set(path, { status, remaining: times }),
    cut: (path, times) => void cuts.set(path, times),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

/** A call the agent made through the ModelServer port (recorded around the real V2 client). */
export interface ServerCall {
  readonly op: 'load' | 'unload';
  readonly name: string;
  readonly replacing?: boolean;
}

export interface AgentHarnessOptions {
  /** models.json text written (kubelet-style) before the agent starts; none when undefined. */
  readonly models?: string;
  /** Create the model dir before the start (default true). */
  readonly createModelDir?: boolean;
  /** Runs before the first agent start, after the dirs and servers exist (lay out files, preload models). */
  readonly setup?: (h: AgentHarness) => Promise<void> | void;
  readonly loadDelayMs?: number;
  readonly unknownUnloadStatus?: 200 | 404;
  readonly downloadConcurrency?: number;
  readonly loadConcurrency?: number;
  readonly retry?: Partial<RetryPolicy>;
  readonly settleMs?: number;
}

/** The agent and its surroundings; `events`, `sink` and `calls` belong to the current run (reset by restart). */
export interface AgentHarness {
  readonly root: string;
  readonly configDir: string;
  readonly modelDir: string;
  /** A local dir for file:// models. */
  readonly storageDir: string;
  readonly storage: StorageServer;
  readonly standIn: V2ModelServerStandIn;
  readonly events: ReadonlyArray<AgentEvent>;
  readonly sink: LogSink;
  readonly calls: ReadonlyArray<ServerCall>;
  readonly loader: Loader;
  readonly store: ModelStore;
  /** What the agent started from in the current run (the recovered model dir, the server's loaded set). */
  readonly recovered: { readonly onDisk: Snapshot; readonly loaded: ReadonlySet<string> };
  /** The models the stand-in had loaded when Ready was emitted (undefined before Ready). */
  readonly loadedAtReady: ReadonlySet<string> | undefined;
  /** Writes models.json through the kubelet AtomicWriter emulator. */
  write(modelsJsonText: string): void;
  /** Resolves on the current run's Ready event. */
  waitForReady(timeoutMs?: number): Promise<void>;
  /** Resolves when the latest status of `model` in the current run has `phase` (and matches `where`, if given). */
  waitForPhase(
    model: string,
    phase: ModelPhase,
    timeoutMs?: number,
    where?: (status: ModelStatus) => boolean,
  ): Promise<ModelStatus>;
  /** Resolves when the loader has had nothing queued, running or waiting for a retry for `quietMs`. */
  waitForIdle(timeoutMs?: number, quietMs?: number): Promise<void>;
  /** The phases `model` went through in the current run, in order. */
  phases(model: string): ModelPhase[];
  /** The latest status of `model` in the current run. */
  lastStatus(model: string): ModelStatus | undefined;
  /** Model-dir entries, sorted. */
  modelDirEntries(): Promise<string[]>;
  /** The content of `<model dir>/<model>/<file>`. */
  modelFile(model: string, file: string): Promise<string>;
  /** The `SUCCESS.*` markers in `<model dir>/<model>` and their parsed JSON content. */
  markers(model: string): Promise<Array<{ readonly file: string; readonly json: unknown }>>;
  /** Writes `files` under `<storage dir>/<path>` and returns the dir's file:// URL. */
  localModel(path: string, files: Readonly<Record<string, string>>): Promise<string>;
  /** Unsubscribes the agent (the stand-in and dirs stay). */
  stop(): Promise<void>;
  /** Starts a new agent (startAgent, on the production edges) on the same dirs; resolves once it has recovered. */
  start(): Promise<void>;
  /** stop() then start(). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

const defaultRetry: RetryPolicy = { baseMs: 10, maxMs: 40, maxAttempts: 4 };

/** A ModelServer that records each call, then forwards it. */
const recordingServer = (inner: ModelServer, calls: ServerCall[]): ModelServer => ({
  load: (name, replacing, signal) => {
    calls.push({ op: 'load', name, replacing });
    return inner.load(name, replacing, signal);
  },
  unload: (name, signal) => {
    calls.push({ op: 'unload', name });
    return inner.unload(name, signal);
  },
  loadedModels: (signal) => inner.loadedModels(signal),
});

export const startAgentHarness = async (options: AgentHarnessOptions = {}): Promise<AgentHarness> => {
  const root = await mkdtemp(join(tmpdir(), 'modelsync-agent-'));
  const configDir = join(root, 'configs');
  const modelDir = join(root, 'models');
  const storageDir = join(root, 'storage');
  await mkdir(configDir);
  await mkdir(storageDir);
  if (options.createModelDir !== false) await mkdir(modelDir);
  const storage = await startStorageServer();
  const standIn = await startV2ModelServer({
    modelDir,
    loadDelayMs: options.loadDelayMs ?? 0,
    unknownUnloadStatus: options.unknownUnloadStatus ?? 404,
  });
  const retry: RetryPolicy = { ...defaultRetry, ...options.retry };

  let events: AgentEvent[] = [];
  let calls: ServerCall[] = [];
  let sink = new LogSink();
  let subscription: Subscription | undefined;
  let idleSubscription: Subscription | undefined;
  let idle = true;
  let loader: Loader | undefined;
  let store: ModelStore | undefined;
  let recovered: AgentHarness['recovered'] = { onDisk: new Map(), loaded: new Set() };
  let loadedAtReady: Set<string> | undefined;

  const start = async (): Promise<void> => {
    if (subscription !== undefined) throw new Error('the agent is running already');
    events = [];
    calls = [];
    sink = new LogSink();
    loadedAtReady = undefined;
    const log: Logger = pino({ level: 'debug' }, sink);
    const config: AppConfig = {
      ...defaultAppConfig,
      configDir,
      modelDir,
      serverUrl: standIn.url,
      requestTimeoutMs: 10_000,
      loadTimeoutMs: 10_000,
    };
    const edges = capabilities(config, log, {});
    if (E.isLeft(edges)) throw new Error(edges.left);
    store = edges.right.store;
    const runEvents = events;
    let started!: () => void;
    let failed!: (error: unknown) => void;
    const startedOrFailed = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    // The production edges and start-up, with the server's calls recorded and a config dir re-checked often.
    subscription = startAgent(
      {
        ...edges.right,
        server: recordingServer(edges.right.server, calls),
        configSource: configDirSource({
          dir: configDir,
          log: log.child({ component: 'config' }),
          recheckMs: 50,
        }),
      },
      {
        ...agentSettings(config, log),
        downloadConcurrency: options.downloadConcurrency ?? 4,
        loadConcurrency: options.loadConcurrency ?? 2,
        retry,
        settleMs: options.settleMs ?? 80,
        onStart: ({ inPlace, loader: created }) => {
          recovered = { onDisk: inPlace.onDisk, loaded: inPlace.loaded };
          loader = created;
          idleSubscription = created.idle$.subscribe((value) => (idle = value));
          started();
        },
      },
    ).subscribe({
      next: (event) => {
        if (event._tag === 'Ready') loadedAtReady = new Set(standIn.loaded);
        runEvents.push(event);
      },
      error: (error: unknown) => {
        sink.lines.push({ level: 60, msg: `agent stream failed: ${String(error)}` });
        failed(error);
      },
    });
    await startedOrFailed.catch((error: unknown) => {
      subscription = undefined;
      throw error;
    });
  };

  const stop = async (): Promise<void> => {
    subscription?.unsubscribe();
    idleSubscription?.unsubscribe();
    subscription = undefined;
    idleSubscription = undefined;
    await sleep(100); // chokidar closes asynchronously; aborted effects clean their staging dirs
  };

  const statusesOf = (model: string): ModelStatus[] =>
    events.flatMap((e) => (e._tag === 'Status' && e.status.modelName === model ? [e.status] : []));
  const lastStatus = (model: string): ModelStatus | undefined => statusesOf(model).at(-1);

  const harness: AgentHarness = {
    root,
    configDir,
    modelDir,
    storageDir,
    storage,
    standIn,
    get events() {
      return events;
    },
    get sink() {
      return sink;
    },
    get calls() {
      return calls;
    },
    get loader() {
      if (loader === undefined) throw new Error('the agent has not started');
      return loader;
    },
    get store() {
      if (store === undefined) throw new Error('the agent has not started');
      return store;
    },
    get recovered() {
      return recovered;
    },
    get loadedAtReady() {
      return loadedAtReady;
    },
    write: (text) => void atomicWrite(configDir, { 'models.json': text }),
    waitForReady: (timeoutMs = 20_000) =>
      waitFor(() => events.some((e) => e._tag === 'Ready'), timeoutMs, 'the Ready event'),
    waitForPhase: async (model, phase, timeoutMs = 20_000, where = () => true) => {
      await waitFor(
        () => {
          const status = lastStatus(model);
          return status !== undefined && status.phase === phase && where(status);
        },
        timeoutMs,
        `${model} to be ${phase} (is ${lastStatus(model)?.phase ?? 'unknown'})`,
      );
      return lastStatus(model)!;
    },
    waitForIdle: async (timeoutMs = 20_000, quietMs = 300) => {
      // Idle for quietMs on end, so a config change written just before has been read and applied.
      let idleSince: number | undefined;
      await waitFor(
        () => {
          if (!idle) idleSince = undefined;
          else idleSince ??= Date.now();
          return idleSince !== undefined && Date.now() - idleSince >= quietMs;
        },
        timeoutMs,
        'the loader to stay idle',
      );
    },
    phases: (model) => statusesOf(model).map((s) => s.phase),
    lastStatus,
    modelDirEntries: async () => (await readdir(modelDir)).sort(),
    modelFile: (model, file) => readFile(join(modelDir, model, file), 'utf8'),
    markers: async (model) => {
      const files = (await readdir(join(modelDir, model))).filter((f) => f.startsWith('SUCCESS.')).sort();
      return Promise.all(
        files.map(async (file) => ({
          file,
          json: JSON.parse(await readFile(join(modelDir, model, file), 'utf8')) as unknown,
        })),
      );
    },
    localModel: async (path, files) => {
      const dir = join(storageDir, path);
      for (const [file, content] of Object.entries(files)) {
        await mkdir(dirname(join(dir, file)), { recursive: true });
        await writeFile(join(dir, file), content);
      }
      return pathToFileURL(dir).href;
    },
    stop,
    start,
    restart: async () => {
      await stop();
      await start();
    },
    close: async () => {
      await stop();
      await Promise.all([storage.close(), standIn.close()]);
      await rm(root, { recursive: true, force: true });
    },
  };

  try {
    if (options.models !== undefined) harness.write(options.models);
    await options.setup?.(harness);
    await start();
  } catch (error) {
    await harness.close();
    throw error;
  }
  return harness;
};

/**
 * For a test file: registers an `afterEach` that closes the harness the test started, and returns the `start`
 * its tests call (one harness per test).
 */
export const useAgentHarness = (): ((options?: AgentHarnessOptions) => Promise<AgentHarness>) => {
  let harness: AgentHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  return async (options = {}) => (harness = await startAgentHarness(options));
};
