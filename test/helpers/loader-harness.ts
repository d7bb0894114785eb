/** A loader on real edges (model dir, local and HTTP storage, the V2 stand-in), with its calls and events recorded. */
import { mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { either as E } from 'fp-ts';
import pino, { type Logger } from 'pino';
import { defer, mergeWith, Subject, type Subscription } from 'rxjs';
import { defaultAppConfig, type AppConfig } from '../../src/core/flags/app-config';
import { specEquals, type Snapshot } from '../../src/core/snapshot';
import type { ModelSpec } from '../../src/core/model-config';
import type { ModelName } from '../../src/core/model-name';
import type { ModelOp } from '../../src/core/model-op';
import type { AgentEvent, ModelPhase, ModelStatus } from '../../src/core/model-status';
import { inPlaceSnapshot, type InPlace } from '../../src/core/in-place';
import { loadJournalFileName } from '../../src/model-dir/load-journal';
import type { Loader } from '../../src/loader/loader';
import type { Installed, ModelServer, ModelStore, Staged } from '../../src/ports';
import { capabilities } from '../../src/wiring/capabilities';
import { startAgent, type AgentCapabilities } from '../../src/agent/start-agent';
import { fixedConfigSource } from '../../src/testing/fixed-config-source';
import {
  startV2ModelServer,
  type V2ModelServerStandIn,
  type V2ModelServerStandInOptions,
} from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { writeFiles } from './file-tree';
import { LogSink } from './log-sink';
import { removeTempDir, tempDir } from './temp-dir';
import { install } from './install';

/** The edge steps the loader takes for a model; `download` runs inside `install` (it fills the staging dir). */
export type Step = 'install' | 'download' | 'remove' | 'load' | 'unload';

/** One recorded edge call: its start, and its end or failure, in the order they happened across all models. */
export interface EdgeCall {
  readonly model: string;
  readonly step: Step;
  readonly at: 'start' | 'end' | 'fail';
  /** Loads: whether the loader asked for a reload of a loaded model. */
  readonly replacing?: boolean;
  /** Installs: the spec being installed. */
  readonly spec?: ModelSpec;
}

/** A call held at its start until released: makes a model "busy" for as long as a test needs. */
export interface Hold {
  /** Resolves when the held call has started (and is waiting). */
  readonly reached: Promise<void>;
  /** Lets the held call go on (to the real edge). Idempotent. */
  readonly release: () => void;
}

export interface LoaderHarnessOptions {
  /** Default 2. */
  readonly downloadConcurrency?: number;
  /** Default 2. */
  readonly loadConcurrency?: number;
  /** Attempts per step before Failed; default 4. Backoff is always baseMs 5, maxMs 50. */
  readonly maxAttempts?: number;
  /** The stand-in's load delay; default 0 (change it later with `standIn.setLoadDelay`). */
  readonly loadDelayMs?: number;
  readonly unknownUnloadStatus?: 200 | 404;
  /** The stand-in's manifest check (see V2ModelServerStandInOptions.manifest); none by default. */
  readonly manifest?: V2ModelServerStandInOptions['manifest'];
  /** Awaited at the start of every edge call, before it runs: look at the file system at that moment. */
  readonly onCall?: (call: EdgeCall) => void | Promise<void>;
  /** Wraps the (recorded) ModelServer the loader gets, e.g. to count concurrency. */
  readonly wrapServer?: (server: ModelServer) => ModelServer;
  /** Settings for the production edges (timeouts, download limits), over the harness's own. */
  readonly config?: Partial<AppConfig>;
}

export interface LoaderHarness {
  /** Temp root holding `models/` (the model dir M) and `storage/` (local model sources). */
  readonly root: string;
  readonly modelDir: string;
  readonly storageDir: string;
  /** The V2 stand-in, serving `modelDir`. */
  readonly standIn: V2ModelServerStandIn;
  /** The real model dir store, unrecorded (for setting up models on disk). */
  readonly store: ModelStore;
  readonly sink: LogSink;
  readonly log: Logger;
  /**
   * Ops pushed here reach the loader once started: the agent runs on a config dir without models.json (so the
   * config makes no op) and merges these into its ops (`opOperators`). Completing or failing it ends the agent.
   */
  readonly ops$: Subject<ModelOp>;
  /** Everything the agent (so the loader: the config makes no op and no Ready) emitted, in order. */
  readonly events: ReadonlyArray<AgentEvent>;
  /** Every edge call the loader made, in order. */
  readonly calls: ReadonlyArray<EdgeCall>;
  /** The running loader; throws before `start`. */
  readonly loader: Loader;
  /** `inPlaceSnapshot` of what was in place at `start`: what the first config would be diffed against. */
  readonly inPlace: Snapshot;
  /** True once the agent (and so `loader.run`) completed. */
  readonly completed: () => boolean;
  /** Resolves when the agent (and so `loader.run`) completes, rejects when it errors. */
  readonly done: Promise<void>;
  /** The most calls of `step` that were in progress at once (across models). */
  readonly maxInFlight: (step: Step) => number;
  /** Creates `storage/<name>/model.bin` (content defaults to the name) and returns the dir: a local storageUri. */
  readonly source: (name: string, content?: string) => Promise<string>;
  /** Installs `spec` (a local source) into the model dir through the real store, as a previous run left it. */
  readonly installOnDisk: (name: string, spec: ModelSpec) => Promise<void>;
  /**
   * Starts the agent (startAgent) and resolves once it takes ops. What is in place is what a real start finds
   * (`store.recover()`, the journal and the stand-in's loaded models) unless `inPlace` says otherwise.
   */
  readonly start: (inPlace?: InPlace) => Promise<Loader>;
  readonly push: (...ops: ModelOp[]) => void;
  /** The phases emitted for `model`, in order. */
  readonly phases: (model: string) => ModelPhase[];
  /** The last status emitted for `model`. */
  readonly statusOf: (model: string) => ModelStatus | undefined;
  /** The calls for `model` (of `steps`, default all) as `'<step>:<at>'`, loads that replace as `'load:start:replacing'`. */
  readonly callsOf: (model: string, steps?: ReadonlyArray<Step>) => string[];
  /** Holds the next call of `step` for `model` at its start (see Hold); released on `close` at the latest. */
  readonly hold: (step: Step, model: string) => Hold;
  /** Waits until the last status emitted for `model` is `phase` (and, when given, has a spec equal to `spec`). */
  readonly waitForPhase: (
    model: string,
    phase: ModelPhase,
    spec?: ModelSpec,
    timeoutMs?: number,
  ) => Promise<void>;
  /** Waits until the loader is idle (nothing queued, working or waiting to retry). */
  readonly waitForIdle: (timeoutMs?: number) => Promise<void>;
  /** Entries of the model dir, sorted (`.tmp-*` staging and `.old-*` replaced versions included; not the load journal file). */
  readonly modelDirEntries: () => Promise<string[]>;
  /** Unsubscribes the loader (aborting its work) and releases holds; the dirs and the stand-in stay. */
  readonly stop: () => void;
  /** `stop`, waits for aborted calls to end, stops the stand-in and deletes the temp dirs. */
  readonly close: () => Promise<void>;
}

const retry = { baseMs: 5, maxMs: 50 };

/** Builds the dirs and starts the stand-in; call `start` (after setting up what is "in place") to run the loader. */
export const createLoaderHarness = async (options: LoaderHarnessOptions = {}): Promise<LoaderHarness> => {
  const root = await tempDir('loader');
  const modelDir = join(root, 'models');
  const storageDir = join(root, 'storage');
  await mkdir(modelDir);
  await mkdir(storageDir);
  const standIn = await startV2ModelServer({
    modelDir,
    loadDelayMs: options.loadDelayMs ?? 0,
    ...(options.manifest !== undefined ? { manifest: options.manifest } : {}),
    ...(options.unknownUnloadStatus !== undefined
      ? { unknownUnloadStatus: options.unknownUnloadStatus }
      : {}),
  });
  const sink = new LogSink();
  const log = pino({ level: 'debug' }, sink);
  const config = {
    ...defaultAppConfig,
    modelDir,
    serverUrl: standIn.url,
    requestTimeoutMs: 10_000,
    // Tests keep their local model sources in temp dirs.
    localStorageRoots: [tmpdir()],
    // They stand in for a remote store: copied as a download would be, so that a source changed later changes no
    // installed model (linking: test/storage/local/local-storage-links.test.ts, pvc-links.e2e).
    localModelFiles: 'copy' as const,
    ...options.config,
  };
  const edges = capabilities(config, log, {});
  if (E.isLeft(edges)) throw new Error(edges.left);
  const { store, journal, server: realServer, download } = edges.right;

  const events: AgentEvent[] = [];
  const calls: EdgeCall[] = [];
  const inFlight = new Map<Step, number>();
  const maxInFlight = new Map<Step, number>();
  const holds: Array<{
    step: Step;
    model: string;
    taken: boolean;
    reached: () => void;
    gate: Promise<void>;
  }> = [];
  const releases: Array<() => void> = [];

  /** Records `call`, waits at a hold if one matches, runs `effect` and records its end or failure. */
  const recorded = async <T>(call: EdgeCall, effect: () => Promise<T>): Promise<T> => {
    calls.push(call);
    const running = (inFlight.get(call.step) ?? 0) + 1;
    inFlight.set(call.step, running);
    maxInFlight.set(call.step, Math.max(maxInFlight.get(call.step) ?? 0, running));
    try {
      await options.onCall?.(call);
      const hold = holds.find((h) => !h.taken && h.step === call.step && h.model === call.model);
      if (hold !== undefined) {
        hold.taken = true;
        hold.reached();
        await hold.gate;
      }
      const value = await effect();
      calls.push({ ...call, at: 'end' });
      return value;
    } catch (error) {
      calls.push({ ...call, at: 'fail' });
      throw error;
    } finally {
      inFlight.set(call.step, (inFlight.get(call.step) ?? 1) - 1);
    }
  };

  // An install is recorded from its staging to its commit or abandon; its download, from the staging dir it fills.
  const stagedFor = new Map<string, ModelName>();
  // The store fills only staging dirs it made: each recorded one stands for the real one beneath it.
  const realStaged = new WeakMap<Staged, Staged>();
  const recordedStore: ModelStore = {
    recover: () => store.recover(),
    stage: (name, spec, signal) =>
      new Promise<Staged>((staged, failed) => {
        let end!: {
          readonly done: (installed: Installed) => void;
          readonly failed: (error: unknown) => void;
        };
        const ended = new Promise<Installed>((done, notDone) => (end = { done, failed: notDone }));
        recorded({ model: name, step: 'install', at: 'start', spec }, async () => {
          const real = await store.stage(name, spec, signal);
          stagedFor.set(real.dir, name);
          const recordedStaged: Staged = {
            dir: real.dir,
            filling: (outer, fill) => real.filling(outer, fill),
            commit: async (beforeSwap, written) => {
              try {
                const installed = await real.commit(beforeSwap, written);
                end.done(installed);
                return installed;
              } catch (error) {
                end.failed(error);
                throw error;
              } finally {
                stagedFor.delete(real.dir);
              }
            },
            abandon: async (cause) => {
              const error = await real.abandon(cause);
              stagedFor.delete(real.dir);
              end.failed(error);
              return error;
            },
          };
          realStaged.set(recordedStaged, real);
          staged(recordedStaged);
          return ended;
        }).catch(failed);
      }),
    remove: (name) => recorded({ model: name, step: 'remove', at: 'start' }, () => store.remove(name)),
    isInstalled: (name, spec) => store.isInstalled(name, spec),
    fillFrom: (source, staged, signal) => store.fillFrom(source, realStaged.get(staged) ?? staged, signal),
  };
  const recordedDownload: typeof download = (uri, dir, signal, progress, request) =>
    recorded({ model: stagedFor.get(dir) ?? '?', step: 'download', at: 'start' }, () =>
      download(uri, dir, signal, progress, request),
    );
  const recordedServer: ModelServer = {
    load: (name, replacing, signal) =>
      recorded({ model: name, step: 'load', at: 'start', replacing }, () =>
        realServer.load(name, replacing, signal),
      ),
    unload: (name, signal) =>
      recorded({ model: name, step: 'unload', at: 'start' }, () => realServer.unload(name, signal)),
    loadedModels: (signal) => realServer.loadedModels(signal),
  };
  const server = options.wrapServer ? options.wrapServer(recordedServer) : recordedServer;
  const recorded$: AgentCapabilities = {
    configSource: fixedConfigSource(),
    store: recordedStore,
    journal,
    server,
    download: recordedDownload,
  };
  /** The recorded capabilities, reporting `inPlace` as what the model dir, the journal and the server hold. */
  const claiming = (inPlace: InPlace): AgentCapabilities => ({
    ...recorded$,
    store: { ...recordedStore, recover: () => Promise.resolve(inPlace.onDisk) },
    journal: {
      ...journal,
      unconfirmed: () => Promise.resolve((inPlace.unconfirmed ?? new Set()) as ReadonlySet<ModelName>),
    },
    server: { ...server, loadedModels: () => Promise.resolve(inPlace.loaded) },
  });

  const ops$ = new Subject<ModelOp>();
  let loader: Loader | undefined;
  let inPlaceNow: Snapshot = new Map();
  let subscription: Subscription | undefined;
  let completed = false;
  let settle: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // A test that never awaits `done` must not get an unhandled rejection.
  done.catch(() => undefined);

  const lastStatus = (model: string): ModelStatus | undefined => {
    for (let i = events.length - 1; i >= 0; i--) {
      const event = events[i]!;
      if (event._tag === 'Status' && event.status.modelName === model) return event.status;
    }
    return undefined;
  };
  const phases = (model: string): ModelPhase[] =>
    events.flatMap((e) => (e._tag === 'Status' && e.status.modelName === model ? [e.status.phase] : []));

  const harness: LoaderHarness = {
    root,
    modelDir,
    storageDir,
    standIn,
    store,
    sink,
    log,
    ops$,
    events,
    calls,
    get loader(): Loader {
      if (loader === undefined) throw new Error('the loader harness is not started');
      return loader;
    },
    get inPlace(): Snapshot {
      return inPlaceNow;
    },
    completed: () => completed,
    done,
    maxInFlight: (step) => maxInFlight.get(step) ?? 0,
    source: async (name, content = name) => {
      const dir = join(storageDir, name);
      await writeFiles(dir, { 'model.bin': content });
      return dir;
    },
    installOnDisk: async (name, spec) => {
      const installed = await install(
        store,
        name as ModelName,
        spec,
        (dir, signal) => download(spec.storageUri, dir, signal),
        new AbortController().signal,
      );
      await installed.dropReplaced();
    },
    start: async (inPlace) => {
      if (loader !== undefined) throw new Error('the loader harness is already started');
      let takingOps!: () => void;
      const ready = new Promise<void>((resolve) => (takingOps = resolve));
      subscription = startAgent(inPlace === undefined ? recorded$ : claiming(inPlace), {
        log,
        downloadConcurrency: options.downloadConcurrency ?? 2,
        loadConcurrency: options.loadConcurrency ?? 2,
        retry: { ...retry, maxAttempts: options.maxAttempts ?? 4 },
        settleMs: 100,
        opOperators: [
          mergeWith(
            defer(() => {
              takingOps();
              return ops$;
            }),
          ),
        ],
        onStart: (start) => {
          inPlaceNow = inPlaceSnapshot(start.inPlace);
          loader = start.loader;
        },
      }).subscribe({
        next: (event) => events.push(event),
        error: (error: unknown) => settle?.reject(error),
        complete: () => {
          completed = true;
          settle?.resolve();
        },
      });
      await Promise.race([ready, done]);
      return harness.loader;
    },
    push: (...ops) => {
      for (const op of ops) ops$.next(op);
    },
    phases,
    statusOf: lastStatus,
    callsOf: (model, steps) =>
      calls
        .filter((c) => c.model === model && (steps === undefined || steps.includes(c.step)))
        .map(
          (c) =>
            `${c.step}:${c.at}${c.step === 'load' && c.at === 'start' && c.replacing ? ':replacing' : ''}`,
        ),
    hold: (step, model) => {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      holds.push({ step, model, taken: false, reached, gate });
      releases.push(release);
      return { reached: reachedPromise, release };
    },
    waitForPhase: (model, phase, spec, timeoutMs = 10_000) =>
      waitFor(
        () => {
          const status = lastStatus(model);
          return (
            status?.phase === phase &&
            (spec === undefined || (status.spec !== undefined && specEquals(status.spec, spec)))
          );
        },
        timeoutMs,
        `${model} to be ${phase}`,
      ).catch((error: unknown) => {
        // The phases at the time of the timeout say where the model got stuck.
        throw new Error(`${(error as Error).message}; its phases: ${phases(model).join(', ') || 'none'}`);
      }),
    waitForIdle: async (timeoutMs = 10_000) => {
      let idle = false;
      const watch = harness.loader.idle$.subscribe((value) => (idle = value));
      try {
        await waitFor(() => idle, timeoutMs, 'the loader to be idle');
      } finally {
        watch.unsubscribe();
      }
    },
    modelDirEntries: async () => (await readdir(modelDir)).filter((e) => e !== loadJournalFileName).sort(),
    stop: () => {
      subscription?.unsubscribe();
      for (const release of releases) release();
    },
    close: async () => {
      harness.stop();
      // Aborted calls still finish (a staging dir is deleted, a request fails): let them before deleting `root`.
      const settled = () => [...inFlight.values()].every((n) => n === 0);
      await waitFor(settled, 5_000, 'aborted edge calls to end').catch(() => undefined);
      await standIn.close();
      await removeTempDir(root);
    },
  };
  return harness;
};

/**
 * `createLoaderHarness` then `start` with what a real start finds in place (an empty model dir, no loads):
 *
 *     const h = await startLoaderHarness({ downloadConcurrency: 3 });
 *     h.push(add(name('m1'), spec(await h.source('m1'))));
 *     await h.waitForPhase('m1', 'Loaded');
 *     expect(h.callsOf('m1', ['install', 'load'])).toEqual([...]);
 *     await h.close(); // in afterEach
 */
export const startLoaderHarness = async (options: LoaderHarnessOptions = {}): Promise<LoaderHarness> => {
  const harness = await createLoaderHarness(options);
  await harness.start();
  return harness;
};
