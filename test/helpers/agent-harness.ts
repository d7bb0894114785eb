/** Runs the whole agent (real config dir, model dir, HTTP storage server, V2 stand-in) in-process for acceptance tests. */
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import type { Subscription } from 'rxjs';
import { manifestKey } from '../../src/core/marker';
import { defaultAppConfig, flagTable, type AppConfig } from '../../src/core/flags/app-config';
import type { AgentEvent, ModelPhase, ModelStatus } from '../../src/core/model-status';
import type { Snapshot } from '../../src/core/snapshot';
import { configDirSource } from '../../src/config-source/config-dir';
import { loadJournalFileName } from '../../src/model-dir/load-journal';
import { createLogger } from '../../src/log/logger';
import type { Loader } from '../../src/loader/loader';
import type { RetryPolicy } from '../../src/core/retry-policy';
import type { ModelServer, ModelStore } from '../../src/ports';
import { agentSettings, capabilities } from '../../src/wiring/capabilities';
import { startAgent } from '../../src/agent/start-agent';
import { atomicWrite } from '../../src/testing/atomic-writer';
import {
  startV2ModelServer,
  type V2Load,
  type V2ModelServerStandIn,
  type V2Request,
} from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { writeFiles } from './file-tree';
import { LogSink } from './log-sink';
import { startStorageServer, type StorageServer } from './storage-server';
import { removeTempDir, tempDir } from './temp-dir';

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
  /** The jitter source of retry delays (`() => 1`: every delay at its ceiling); default Math.random. */
  readonly random?: () => number;
  readonly settleMs?: number;
  /** The environment the production edges read (`<host>-headers`); default none. */
  readonly env?: Readonly<Record<string, string>>;
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
  /** The stand-in's finished loads of `model`, in completion order (all runs). */
  loadsOf(model: string): V2Load[];
  /** The unload requests the stand-in received (all runs), only those of `model` when given. */
  unloadRequests(model?: string): V2Request[];
  /** The phases `model` went through in the current run, in order. */
  phases(model: string): ModelPhase[];
  /** The latest status of `model` in the current run. */
  lastStatus(model: string): ModelStatus | undefined;
  /** Model-dir entries but the load journal file, sorted. */
  modelDirEntries(): Promise<string[]>;
  /** The content of `<model dir>/<model>/<file>`. */
  modelFile(model: string, file: string): Promise<string>;
  /**
   * The `SUCCESS.*` markers in `<model dir>/<model>`: `json` is the spec as KServe's agent reads it, `files` the
   * manifest modelsync adds beside it (`modelsyncFiles`; see docs/architecture.md, "Durability").
   */
  markers(
    model: string,
  ): Promise<Array<{ readonly file: string; readonly json: unknown; readonly files: unknown }>>;
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
  const root = await tempDir('agent');
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
    // The production logger, redaction guard included, writing to the sink.
    const log: Logger = createLogger('debug', sink);
    const config: AppConfig = {
      ...defaultAppConfig,
      configDir,
      modelDir,
      serverUrl: standIn.url,
      requestTimeoutMs: 10_000,
      loadTimeoutMs: 10_000,
      // Tests keep their local model sources in temp dirs.
      localStorageRoots: [tmpdir()],
      // They stand in for a remote store: copied as a download would be, so that a source changed later changes no
      // installed model (linking: test/storage/local/local-storage-links.test.ts, pvc-links.e2e).
      localModelFiles: 'copy',
    };
    const edges = capabilities(config, log, options.env ?? {});
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
          maxBytesName: flagTable.maxConfigBytes.flag,
        }),
      },
      {
        ...agentSettings(config, log),
        downloadConcurrency: options.downloadConcurrency ?? 4,
        loadConcurrency: options.loadConcurrency ?? 2,
        retry,
        ...(options.random !== undefined ? { random: options.random } : {}),
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
        sink.lines.push({ level: 'fatal', msg: `agent stream failed: ${String(error)}` });
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
        () => `${model} to be ${phase} (is ${lastStatus(model)?.phase ?? 'unknown'})`,
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
    loadsOf: (model) => standIn.loads.filter((load) => load.name === model),
    unloadRequests: (model) =>
      standIn.requests.filter(
        (request) => request.path.endsWith('/unload') && (model === undefined || request.name === model),
      ),
    phases: (model) => statusesOf(model).map((s) => s.phase),
    lastStatus,
    modelDirEntries: async () => (await readdir(modelDir)).filter((e) => e !== loadJournalFileName).sort(),
    modelFile: (model, file) => readFile(join(modelDir, model, file), 'utf8'),
    markers: async (model) => {
      const files = (await readdir(join(modelDir, model))).filter((f) => f.startsWith('SUCCESS.')).sort();
      return Promise.all(
        files.map(async (file) => {
          const content = JSON.parse(await readFile(join(modelDir, model, file), 'utf8')) as Record<
            string,
            unknown
          >;
          const { [manifestKey]: manifest, ...spec } = content;
          return { file, json: spec, files: manifest };
        }),
      );
    },
    localModel: async (path, files) => {
      const dir = join(storageDir, path);
      await writeFiles(dir, files);
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
      await removeTempDir(root);
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
