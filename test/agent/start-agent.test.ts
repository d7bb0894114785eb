/** startAgent on the production edges: the start-up sequence, the wait for the server, and the integrator hooks. */
import { join } from 'node:path';
import { either as E } from 'fp-ts';
import pino from 'pino';
import { filter, lastValueFrom, map, mergeWith, of, Subject, tap, toArray } from 'rxjs';
import { defaultAppConfig, type AppConfig } from '../../src/core/flags/app-config';
import { httpStatusError, permanentError, retryableError } from '../../src/core/errors';
import { add } from '../../src/core/model-op';
import type { AgentEvent } from '../../src/core/model-status';
import { snapshotOf } from '../../src/core/snapshot';
import { noTelemetry, type ModelServer, type Telemetry } from '../../src/ports';
import { agentSettings, capabilities } from '../../src/wiring/capabilities';
import { ModelDirUnusable, ServerNotAnswering } from '../../src/agent/start-errors';
import {
  startAgent,
  type AgentCapabilities,
  type AgentSettings,
  type AgentStart,
} from '../../src/agent/start-agent';
import { fixedConfigSource } from '../../src/testing/fixed-config-source';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { modelsJson, name, spec } from '../helpers/fixtures';
import { writeFiles } from '../helpers/file-tree';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

/** `then`, after two calls that fail with `error` (a start-up step meeting a fault that passes). */
const failingTwice = <T>(error: Error, then: () => Promise<T>): (() => Promise<T>) => {
  let fails = 2;
  return () => (fails-- > 0 ? Promise.reject(error) : then());
};

describe('startAgent', () => {
  const tmp = useTempDir('start-agent');
  let standIn: V2ModelServerStandIn;
  let config: AppConfig;
  let sink: LogSink;
  const uri = (model: string): string => join(tmp.path, 'storage', model);

  beforeEach(async () => {
    standIn = await startV2ModelServer({ modelDir: join(tmp.path, 'models') });
    config = {
      ...defaultAppConfig,
      modelDir: join(tmp.path, 'models'),
      serverUrl: standIn.url,
      localStorageRoots: [tmp.path],
    };
    sink = new LogSink();
    for (const model of ['a', 'b', 'c']) {
      await writeFiles(uri(model), { 'model.bin': model });
    }
  });
  afterEach(() => standIn.close());

  /** The production edges on `config`, reading models.json `text` that never changes. */
  const edges = (text?: string): AgentCapabilities => {
    const built = capabilities(config, pino(sink), {});
    if (E.isLeft(built)) throw new Error(built.left);
    return { ...built.right, configSource: fixedConfigSource(text) };
  };
  /** The CLI's defaults, with short retries and the log going to `sink`. */
  const settings = (): AgentSettings => ({
    ...agentSettings(defaultAppConfig, pino(sink)),
    retry: { baseMs: 5, maxMs: 20, maxAttempts: 3 },
  });
  const ready = (events: ReadonlyArray<AgentEvent>) => events.filter((event) => event._tag === 'Ready');

  it('recovers, loads the config, emits Ready and completes once a config that never changes is applied', async () => {
    const events = await lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a'), b: uri('b') })), settings()).pipe(toArray()),
    );
    expect(ready(events)).toEqual([{ _tag: 'Ready', modelCount: 2 }]);
    expect([...standIn.loaded].sort()).toEqual(['a', 'b']);
    expect(sink.withMessage('recovered what is in place')).toHaveLength(1);
    expect(sink.withMessage('start-up sync complete; ready')[0]).toMatchObject({ modelCount: 2 });
  });

  it('dates each status by the wall clock (what /status shows as since), not by the process uptime', async () => {
    const before = Date.now();
    const events = await lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a') })), settings()).pipe(toArray()),
    );
    const sinces = events.flatMap((event) => (event._tag === 'Status' ? [event.status.since] : []));
    expect(sinces.length).toBeGreaterThan(0);
    for (const since of sinces) {
      expect(since).toBeGreaterThanOrEqual(before - 1000);
      expect(since).toBeLessThanOrEqual(Date.now() + 1000);
    }
  });

  it('applies the config when the telemetry of config reads throws (an integrator’s), telling each throw as a defect', async () => {
    const throwing = {
      ...noTelemetry,
      configRead: () => {
        throw new Error('telemetry bug');
      },
    };
    const events = await lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a'), b: uri('b') })), {
        ...settings(),
        telemetry: throwing,
      }).pipe(toArray()),
    );
    expect(ready(events)).toEqual([{ _tag: 'Ready', modelCount: 2 }]);
    expect([...standIn.loaded].sort()).toEqual(['a', 'b']);
    expect(sink.withMessage('the config read telemetry threw: a defect; going on').length).toBeGreaterThan(0);
  });

  it('keeps running and repairing when every method of the telemetry throws (an integrator’s), telling each throw as a defect', async () => {
    const fail = (): never => {
      throw new Error('telemetry bug');
    };
    const throwing: Telemetry = {
      configRead: fail,
      resyncRun: fail,
      repair: fail,
      retry: fail,
      repairsDeferred: fail,
      watcherAlive: fail,
      nodeCache: fail,
    };
    // One load refused first (a retry), and a model only the server lists (a repair at the resync).
    standIn.failNextLoads(1);
    standIn.preload('x', 'y');
    const resync$ = new Subject<void>();
    const events: AgentEvent[] = [];
    const ending = lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a') })), {
        ...settings(),
        telemetry: throwing,
        maxUnlistedUnloads: 1,
        resync: { intervalMs: 0, signal$: resync$ },
      }).pipe(
        tap((event) => events.push(event)),
        toArray(),
      ),
    );
    // The start unloads one of the two and leaves the other to the resync.
    await waitFor(() => ready(events).length > 0 && standIn.loaded.size === 2, 20_000, 'Ready');
    expect(standIn.loaded.has('a')).toBe(true);
    resync$.next();
    await waitFor(() => standIn.loaded.size === 1, 20_000, 'the unlisted model unloaded by the resync');
    resync$.complete();
    await ending;
    expect([...standIn.loaded]).toEqual(['a']);
    expect(events.filter((event) => event._tag === 'Status' && event.status.phase === 'Failed')).toEqual([]);
    for (const what of ['retry', 'resync run', 'repair', 'repairs deferred'])
      expect(sink.withMessage(`the ${what} telemetry threw: a defect; going on`).length).toBeGreaterThan(0);
  });

  // Past maxAttempts (3) too: the start-up wait has no cap on attempts.
  it.each([2, 5])(
    'asks a server that does not answer yet again with backoff, logging each wait (%d refusals)',
    async (refusalCount) => {
      const inner = edges(modelsJson({ a: uri('a') }));
      let refusals = refusalCount;
      const server: ModelServer = {
        ...inner.server,
        loadedModels: (signal) =>
          refusals-- > 0
            ? Promise.reject(new Error('connect ECONNREFUSED'))
            : inner.server.loadedModels(signal),
      };
      const events = await lastValueFrom(startAgent({ ...inner, server }, settings()).pipe(toArray()));
      expect(
        sink.withMessage('model server not answering yet; waiting for it').map((l) => l['attempt']),
      ).toEqual(Array.from({ length: refusalCount }, (_, index) => index + 1));
      expect(ready(events)).toHaveLength(1);
      expect([...standIn.loaded]).toEqual(['a']);
    },
  );

  it('says a server that answers, but not with its model list, answers: never "not answering"', async () => {
    // A --server-url with a wrong path, or the port of something else: the line said "not answering yet" for good,
    // and only its err field showed the 404.
    const inner = edges(modelsJson({ a: uri('a') }));
    let refusals = 2;
    const server: ModelServer = {
      ...inner.server,
      loadedModels: (signal) =>
        refusals-- > 0
          ? Promise.reject(httpStatusError('listing the models', 404, 'Not Found'))
          : inner.server.loadedModels(signal),
    };
    await lastValueFrom(startAgent({ ...inner, server }, settings()).pipe(toArray()));
    const waits = sink.withMessage('model server answers, but not with its model list; waiting for it');
    expect(waits.map((line) => line['attempt'])).toEqual([1, 2]);
    expect(waits[0]!['err']).toMatchObject({ kind: 'http-status' });
    expect(sink.withMessage('not answering')).toEqual([]);
  });

  it('gives up with ServerNotAnswering once serverWaitMs has passed without an answer, after one last try', async () => {
    const inner = edges(modelsJson({ a: uri('a') }));
    const asked: number[] = [];
    const started = Date.now();
    const server: ModelServer = {
      ...inner.server,
      loadedModels: () => {
        asked.push(Date.now() - started);
        return Promise.reject(new Error('connect ECONNREFUSED'));
      },
    };

    const ending = lastValueFrom(startAgent({ ...inner, server }, { ...settings(), serverWaitMs: 300 }));

    await expect(ending).rejects.toBeInstanceOf(ServerNotAnswering);
    await expect(ending).rejects.toMatchObject({ lastError: { message: 'connect ECONNREFUSED' } });
    // The last try is at the deadline (within a timer's rounding), never well before: the wait is not cut short.
    expect(asked.at(-1)).toBeGreaterThanOrEqual(295);
    expect(standIn.loaded.size).toBe(0);
  });

  // NTP stepping the wall clock while the agent waits: the wait is timed on a clock that never steps. On the wall
  // clock (RxJS's asyncScheduler), set forward an hour it gave up at once; set back an hour it waited an hour more.
  it.each([
    ['forward', 3_600_000],
    ['back', -3_600_000],
  ])(
    'gives up with ServerNotAnswering at serverWaitMs, neither sooner nor later, when the wall clock is set %s an hour',
    async (_direction, stepMs) => {
      const inner = edges(modelsJson({ a: uri('a') }));
      const started = performance.now();
      const asked: number[] = [];
      const realNow = Date.now.bind(Date);
      const clock = jest.spyOn(Date, 'now');
      const server: ModelServer = {
        ...inner.server,
        loadedModels: () => {
          asked.push(performance.now() - started);
          // Stepped once the wait has begun.
          if (asked.length === 1) clock.mockImplementation(() => realNow() + stepMs);
          return Promise.reject(new Error('connect ECONNREFUSED'));
        },
      };
      try {
        const ending = lastValueFrom(startAgent({ ...inner, server }, { ...settings(), serverWaitMs: 1000 }));
        await expect(ending).rejects.toBeInstanceOf(ServerNotAnswering);
        expect(asked.at(-1)).toBeGreaterThanOrEqual(990);
        expect(performance.now() - started).toBeLessThan(30_000);
      } finally {
        clock.mockRestore();
      }
    },
    40_000,
  );

  it('reloads a model the server keeps losing on its backoff after the wall clock is set back an hour', async () => {
    const inner = edges(modelsJson({ a: uri('a') }));
    const loads: number[] = [];
    // A server that forgets every model it loads: each resync finds `a` lost, and reloads it on a backoff.
    const server: ModelServer = {
      ...inner.server,
      loadedModels: () => Promise.resolve(new Set()),
      load: (name, replacing, signal) => {
        loads.push(performance.now());
        return inner.server.load(name, replacing, signal);
      },
    };
    const realNow = Date.now.bind(Date);
    const clock = jest.spyOn(Date, 'now');
    const agent = startAgent(
      { ...inner, server },
      { ...settings(), resync: { intervalMs: 50, signal$: new Subject<void>() } },
    ).subscribe();
    try {
      await waitFor(() => loads.length >= 3, 10_000, 'two reloads of the lost model');
      clock.mockImplementation(() => realNow() - 3_600_000);
      const before = loads.length;
      // The backoff doubles from one interval (50 ms): two more reloads take about two seconds, not an hour.
      await waitFor(() => loads.length >= before + 2, 20_000, 'two reloads after the clock was set back');
    } finally {
      agent.unsubscribe();
      clock.mockRestore();
    }
  }, 40_000);

  it('recovers the model dir again while it does not answer (a hung mount), then starts as usual', async () => {
    const inner = edges(modelsJson({ a: uri('a') }));
    const store = {
      ...inner.store,
      recover: failingTwice(
        retryableError('timeout', `the model dir ${config.modelDir} does not answer`),
        () => inner.store.recover(),
      ),
    };
    const events = await lastValueFrom(startAgent({ ...inner, store }, settings()).pipe(toArray()));
    expect(sink.withMessage('model dir not answering; waiting for it').map((l) => l['attempt'])).toEqual([
      1, 2,
    ]);
    expect(ready(events)).toHaveLength(1);
    expect([...standIn.loaded]).toEqual(['a']);
  });

  it('reads the load journal again while its read fails transiently (EMFILE), then starts as usual', async () => {
    const inner = edges(modelsJson({ a: uri('a') }));
    const journal = {
      ...inner.journal,
      unconfirmed: failingTwice(retryableError('filesystem', `cannot read the load journal: EMFILE`), () =>
        inner.journal.unconfirmed(),
      ),
    };
    const events = await lastValueFrom(startAgent({ ...inner, journal }, settings()).pipe(toArray()));
    expect(sink.withMessage('model dir not answering; waiting for it').map((l) => l['attempt'])).toEqual([
      1, 2,
    ]);
    expect(ready(events)).toHaveLength(1);
    expect([...standIn.loaded]).toEqual(['a']);
  });

  it('stops the start on a recovery that fails for another reason, as before', async () => {
    const inner = edges(modelsJson({ a: uri('a') }));
    const denied = permanentError('filesystem', `cannot read ${config.modelDir}: EACCES`);
    const store = { ...inner.store, recover: () => Promise.reject(denied) };
    const stopped = lastValueFrom(startAgent({ ...inner, store }, settings()));
    await expect(stopped).rejects.toBeInstanceOf(ModelDirUnusable);
    await expect(stopped).rejects.toMatchObject({ failure: denied });
    expect(sink.withMessage('model dir not answering; waiting for it')).toEqual([]);
  });

  it('applies snapshot operators between keepValid and toModelOps: Ready counts what they let through', async () => {
    const events = await lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a'), b: uri('b'), c: uri('c') })), {
        ...settings(),
        snapshotOperators: [
          map((snapshot) => snapshotOf([...snapshot].filter(([model]) => model !== 'b'))),
          map((snapshot) => snapshotOf([...snapshot].filter(([model]) => model !== 'c'))),
        ],
      }).pipe(toArray()),
    );
    expect(ready(events)).toEqual([{ _tag: 'Ready', modelCount: 1 }]);
    expect([...standIn.loaded]).toEqual(['a']);
    expect(sink.withMessage('config accepted')[0]).toMatchObject({ modelCount: 3 });
  });

  it('applies op operators between toModelOps and the loader', async () => {
    const events = await lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a'), b: uri('b') })), {
        ...settings(),
        opOperators: [filter((op) => op.modelName !== 'b')],
      }).pipe(toArray()),
    );
    expect([...standIn.loaded]).toEqual(['a']);
    expect(ready(events)).toHaveLength(1);
  });

  it('lets op operators feed ops of their own to an agent without a config', async () => {
    const events = await lastValueFrom(
      startAgent(edges(), {
        ...settings(),
        opOperators: [mergeWith(of(add(name('c'), spec(uri('c')))))],
      }).pipe(toArray()),
    );
    expect([...standIn.loaded]).toEqual(['c']);
    expect(ready(events)).toEqual([]);
    expect(sink.withMessage('config rejected')).toHaveLength(1);
  });

  it('unloads at most maxUnlistedUnloads of the names only the server lists, and loads a configured one it left out', async () => {
    const ghosts = Array.from({ length: 50 }, (_, i) => `ghost-${String(i).padStart(2, '0')}`);
    standIn.preload(...ghosts, 'zz'); // configured, loaded, no files here; past the cap by name
    const events = await lastValueFrom(
      startAgent(edges(modelsJson({ a: uri('a'), zz: uri('c') })), {
        ...settings(),
        maxUnlistedUnloads: 5,
      }).pipe(toArray()),
    );
    expect(ready(events)).toEqual([{ _tag: 'Ready', modelCount: 2 }]);
    const unloaded = standIn.requests.filter((r) => r.path.endsWith('/unload')).map((r) => r.name);
    expect(unloaded.sort()).toEqual(ghosts.slice(0, 5));
    expect(standIn.loads.map((load) => load.name).sort()).toEqual(['a', 'zz']);
    expect(sink.lines.filter((line) => line['deferred'] !== undefined)).toEqual([
      expect.objectContaining({ deferred: 46, maxUnlistedUnloads: 5 }),
    ]);
  });

  it('hands each subscription its own loader and what it found in place', async () => {
    const starts: AgentStart[] = [];
    const agent$ = startAgent(edges(modelsJson({ a: uri('a') })), {
      ...settings(),
      onStart: (s) => starts.push(s),
    });
    await lastValueFrom(agent$.pipe(toArray()));
    await lastValueFrom(agent$.pipe(toArray()));
    expect(starts).toHaveLength(2);
    expect(starts[0]!.loader).not.toBe(starts[1]!.loader);
    expect(starts[0]!.inPlace.onDisk.size).toBe(0);
    expect([...starts[1]!.inPlace.onDisk.keys()]).toEqual(['a']);
    expect(starts[1]!.inPlace.loaded).toEqual(new Set(['a']));
    expect(starts[1]!.loader.statuses().get(name('a'))?.phase).toBe('Loaded');
  });
});
