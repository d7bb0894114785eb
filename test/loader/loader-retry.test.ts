/** Tests of the loader's retries on virtual time (recording ports): backoff, freed workers, cancelled retries. */
import pino from 'pino';
import { LogSink } from '../helpers/log-sink';
import { Subject, VirtualTimeScheduler, type Subscription } from 'rxjs';
import { httpStatusError, permanentError, retryableError } from '../../src/core/errors';
import type { InPlace } from '../../src/core/in-place';
import { add, type ModelOp } from '../../src/core/model-op';
import type { AgentEvent, ModelPhase } from '../../src/core/model-status';
import { fsError } from '../../src/fs';
import { noTelemetry, type Telemetry } from '../../src/ports';
import { createLoader, type Loader } from '../../src/loader/loader';
import { name, phasesOfRetriedAdd, spec } from '../helpers/fixtures';
import { recordingPorts, type RecordingFailures } from './recording-ports';
import { advance } from './virtual-time';

const [m1, m2] = [name('m1'), name('m2')];
const [v1, v2] = [spec('/models/v1'), spec('/models/v2')];
const unavailable = () => retryableError('http-status', 'model server returned HTTP 503');

/** Lets every promise the fake ports started settle (they resolve at once; no timer is involved). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Moves virtual time on and lets what it started settle. */
const advanceAndSettle = async (scheduler: VirtualTimeScheduler, ms: number): Promise<void> => {
  advance(scheduler, ms);
  await settle();
};

/** A loader on recording ports with one download and one load worker; retries wait 1 s, 2 s, 4 s (no jitter). */
const start = (
  fail: RecordingFailures,
  inPlace: InPlace = { onDisk: new Map(), loaded: new Set() },
  telemetry?: Telemetry,
  { random = () => 1, log = pino({ level: 'silent' }) }: { random?: () => number; log?: pino.Logger } = {},
) => {
  const scheduler = new VirtualTimeScheduler();
  const { ports, calls } = recordingPorts(fail);
  const loader: Loader = createLoader(
    {
      ...ports,
      log,
      downloadConcurrency: 1,
      loadConcurrency: 1,
      retry: { baseMs: 1000, maxMs: 60_000, maxAttempts: 5 },
      random,
      scheduler,
      telemetry,
    },
    inPlace,
  );
  const ops$ = new Subject<ModelOp>();
  const events: AgentEvent[] = [];
  const subscription: Subscription = loader.run(ops$).subscribe((e) => events.push(e));
  const phases = (model: string): ModelPhase[] =>
    events.flatMap((e) => (e._tag === 'Status' && e.status.modelName === model ? [e.status.phase] : []));
  const loads = (model: string): number => calls.filter((c) => c === `load ${model}`).length;
  let idle = false;
  loader.idle$.subscribe((value) => (idle = value));
  return { scheduler, loader, ops$, phases, loads, calls, subscription, idle: () => idle };
};

describe('loader retries (virtual time)', () => {
  it('retries after each backoff on the injected scheduler, not before, and is busy meanwhile', async () => {
    const t = start({ load: { m1: [unavailable(), unavailable()] } });
    t.ops$.next(add(m1, v1));
    await settle();
    expect(t.phases(m1)).toEqual(['Downloading', 'Loading', 'Retrying']);

    await advanceAndSettle(t.scheduler, 999);
    expect([t.loads(m1), t.idle()]).toEqual([1, false]);
    await advanceAndSettle(t.scheduler, 1);
    expect(t.loads(m1)).toBe(2);
    await advanceAndSettle(t.scheduler, 1999);
    expect(t.loads(m1)).toBe(2);
    await advanceAndSettle(t.scheduler, 1);

    expect(t.phases(m1)).toEqual(phasesOfRetriedAdd(2, 'Loaded'));
    expect(t.calls.filter((c) => c.startsWith('install'))).toEqual(['install m1 /models/v1']);
    expect(t.idle()).toBe(true);
  });

  it("waits at least a failure's Retry-After, within the policy's longest wait", async () => {
    const busy = (retryAfterMs: number) => httpStatusError('load m1', 503, 'busy', retryAfterMs);
    const t = start({ load: { m1: [busy(10_000), busy(3_600_000)] } });
    t.ops$.next(add(m1, v1));
    await settle();
    await advanceAndSettle(t.scheduler, 9_999);
    expect(t.loads(m1)).toBe(1);
    await advanceAndSettle(t.scheduler, 1);
    expect(t.loads(m1)).toBe(2);
    // An hour asked: the policy's 60 s.
    await advanceAndSettle(t.scheduler, 59_999);
    expect(t.loads(m1)).toBe(2);
    await advanceAndSettle(t.scheduler, 1);
    expect(t.loads(m1)).toBe(3);
    expect(t.phases(m1).at(-1)).toBe('Loaded');
  });

  it('holds no worker while models wait out their backoff', async () => {
    const t = start({ load: { m1: [unavailable()], m2: [unavailable()] } });
    t.ops$.next(add(m1, v1));
    t.ops$.next(add(m2, v2));
    await settle();
    expect([t.phases(m1).at(-1), t.phases(m2).at(-1)]).toEqual(['Retrying', 'Retrying']);

    const m3 = name('m3'); // both workers would be taken if a backoff held one
    t.ops$.next(add(m3, spec('/models/v3')));
    await settle();

    expect(t.phases(m3)).toEqual(['Downloading', 'Loading', 'Loaded']);
    expect([t.loads(m1), t.loads(m2)]).toEqual([1, 1]);
  });

  it('works on a new spec at once and drops the pending retry of the old one', async () => {
    const t = start({ load: { m1: [unavailable()] } });
    t.ops$.next(add(m1, v1));
    await settle();

    t.ops$.next(add(m1, v2));
    await settle();
    expect(t.phases(m1).slice(-3)).toEqual(['Downloading', 'Loading', 'Loaded']);
    await advanceAndSettle(t.scheduler, 10_000);

    expect(t.calls.filter((c) => c.startsWith('load'))).toEqual(['load m1', 'load m1']);
    expect(t.scheduler.actions).toEqual([]);
    expect(t.idle()).toBe(true);
  });

  it('marks a model the server refused for good as rejected (no resync retries it) until a new spec comes', async () => {
    const refused = () => permanentError('http-status', 'model server load returned HTTP 400: bad config');
    const t = start({
      load: {
        m1: [refused()],
        m2: [unavailable(), unavailable(), unavailable(), unavailable(), unavailable()],
      },
    });
    t.ops$.next(add(m1, v1));
    t.ops$.next(add(m2, v1));
    // Backoffs of 1, 2, 4 and 8 s: the fifth attempt of m2 fails at 15 s.
    for (let second = 0; second < 20; second++) await advanceAndSettle(t.scheduler, 1000);
    const stateOf = (model: string) => t.loader.desiredStates().find((state) => state.name === model);
    expect(stateOf('m1')).toMatchObject({ phase: 'Failed', rejected: true });
    // Failed after its retries ran out: the server may answer again, so a resync still retries it.
    expect(stateOf('m2')).toMatchObject({ phase: 'Failed' });
    expect(stateOf('m2')?.rejected).toBeUndefined();
    t.ops$.next(add(m1, v2));
    await advanceAndSettle(t.scheduler, 1);
    expect(stateOf('m1')).toMatchObject({ phase: 'Loaded' });
    expect(stateOf('m1')?.rejected).toBeUndefined();
  });

  it('leaves a model whose load was redirected to the resync: a redirect (not followed) says nothing of its files', async () => {
    // A proxy before the server sending loads elsewhere (to https, to a login page): fixed, the load may pass.
    const redirected = () => httpStatusError('model server load of "m1" (http://127.0.0.1:8000)', 307);
    const t = start({ load: { m1: [redirected()] } });
    t.ops$.next(add(m1, v1));
    await advanceAndSettle(t.scheduler, 1);
    const stateOf = (model: string) => t.loader.desiredStates().find((state) => state.name === model);
    expect(t.loader.statuses().get(m1)).toMatchObject({ phase: 'Failed', errorKind: 'http-status' });
    expect(stateOf('m1')?.rejected).toBeUndefined();
  });

  it.each([
    [401, 'an auth proxy before the server wanting credentials'],
    [403, 'an auth proxy before the server (kube-rbac-proxy, oauth2-proxy) refusing the call'],
    [407, 'a proxy before the server wanting its own credentials'],
  ])('leaves a model whose load met a %i to the resync: %s says nothing of its files', async (status) => {
    // Fixed (the credentials given, the proxy set right), the same files may load: no new spec is needed.
    const unauthorized = () => httpStatusError('model server load of "m1" (http://127.0.0.1:8000)', status);
    const t = start({ load: { m1: [unauthorized()] } });
    t.ops$.next(add(m1, v1));
    await advanceAndSettle(t.scheduler, 1);
    const stateOf = (model: string) => t.loader.desiredStates().find((state) => state.name === model);
    expect(t.loader.statuses().get(m1)).toMatchObject({ phase: 'Failed', errorKind: 'http-status' });
    expect(stateOf('m1')?.rejected).toBeUndefined();
  });

  it('leaves a model failed by a read-only model dir at its load to the resync, not as refused by the server', async () => {
    // The journal's failure on a read-only model dir, as loadJournal gives it: the disk's, not the server's answer.
    const readOnly = Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
    // On disk, not loaded (the server restarted): the load's own journal record comes first.
    const t = start(
      { starting: { m1: [fsError('cannot record the load of m1', readOnly)] } },
      { onDisk: new Map([[m1, v1]]), loaded: new Set() },
    );
    t.ops$.next(add(m1, v1));
    await advanceAndSettle(t.scheduler, 1);
    const stateOf = (model: string) => t.loader.desiredStates().find((state) => state.name === model);
    expect(t.phases(m1)).toEqual(['Loading', 'Failed']);
    expect(t.loader.statuses().get(m1)).toMatchObject({ errorKind: 'filesystem' });
    // A full or read-only dir is retried by the resync with the same spec (docs/operating.md, retry-failed).
    expect(stateOf('m1')?.rejected).toBeUndefined();
  });

  // The key file (or token file) is read at every call; fixed (the Secret updated), the same files load. Taken for the
  // server's refusal of the files, the model stayed Failed for good: no resync retried it.
  it.each([
    [
      'a TorchServe key file without its key',
      'not-found',
      'the TorchServe key file /var/run/key_file.json has no management.key',
    ],
    [
      'a TorchServe token with a stray character, refused unsent',
      'invalid-setting',
      'the TorchServe token file /var/run/token holds whitespace (U+0020) at character 6 of the token; it is not sent',
    ],
  ] as const)(
    'leaves a model failed by a setting of modelsync at its load (%s) to the resync',
    async (_, kind, reason) => {
      const t = start({ load: { m1: [permanentError(kind, reason)] } });
      t.ops$.next(add(m1, v1));
      await advanceAndSettle(t.scheduler, 1);
      const stateOf = (model: string) => t.loader.desiredStates().find((state) => state.name === model);
      expect(t.loader.statuses().get(m1)).toMatchObject({ phase: 'Failed', errorKind: kind });
      expect(stateOf('m1')?.rejected).toBeUndefined();
    },
  );

  it('counts a model loaded when only the journal record of its confirmed load cannot be written (a full disk)', async () => {
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const t = start({ confirmed: { m1: [fsError('cannot record the load of m1', full)] } });
    t.ops$.next(add(m1, v1));
    await advanceAndSettle(t.scheduler, 10_000);
    // The server loaded it: the unwritten record costs one reload after a restart (docs/reliability.md, Crashes).
    expect(t.phases(m1)).toEqual(['Downloading', 'Loading', 'Loaded']);
    expect(t.loads(m1)).toBe(1);
  });

  it('retries and loads a model when the telemetry of retries throws (an integrator’s), telling each throw as a defect', async () => {
    // createLoader is the public API too: a throw from the integrator's telemetry failed the model (errorKind
    // unknown), where startAgent's own guard would have logged it and gone on.
    const telemetry: Telemetry = {
      ...noTelemetry,
      retry: () => {
        throw new Error('telemetry broke');
      },
    };
    const sink = new LogSink();
    const t = start({ load: { m1: [unavailable()] } }, undefined, telemetry, { log: pino(sink) });
    t.ops$.next(add(m1, v1));
    await advanceAndSettle(t.scheduler, 1);
    await advanceAndSettle(t.scheduler, 1000);
    expect(t.phases(m1)).toEqual(['Downloading', 'Loading', 'Retrying', 'Loading', 'Loaded']);
    expect(sink.withMessage('the retry telemetry threw: a defect; going on')).toHaveLength(1);
  });

  it('fails a model whose attempt threw (a defect) and keeps its worker and its later work', async () => {
    // A defect inside the attempt (here the jitter's random source): attemptOnce rejects outside the failures it
    // handles.
    let throws = 1;
    const random = (): number => {
      if (throws-- > 0) throw new Error('random broke');
      return 1;
    };
    const t = start({ load: { m1: [unavailable()] } }, undefined, undefined, { random });
    t.ops$.next(add(m1, v1));
    await advanceAndSettle(t.scheduler, 1);
    // The backoff is drawn once the retry is reported: the defect fails the model after its Retrying.
    expect(t.phases(m1)).toEqual(['Downloading', 'Loading', 'Retrying', 'Failed']);
    expect(t.loader.statuses().get(m1)).toMatchObject({ errorKind: 'unknown' });
    expect(t.idle()).toBe(true);

    // Both workers are free and the model's chain goes on: a new spec of m1 and another model load.
    t.ops$.next(add(m1, v2));
    t.ops$.next(add(m2, v2));
    await advanceAndSettle(t.scheduler, 1);
    expect([t.phases(m1).at(-1), t.phases(m2).at(-1)]).toEqual(['Loaded', 'Loaded']);
    expect(t.idle()).toBe(true);
  });

  it('cancels pending retries when unsubscribed', async () => {
    const t = start({ load: { m1: [unavailable()] } });
    t.ops$.next(add(m1, v1));
    await settle();
    expect(t.scheduler.actions).toHaveLength(1);

    t.subscription.unsubscribe();
    await advanceAndSettle(t.scheduler, 10_000);

    expect(t.loads(m1)).toBe(1);
    expect(t.scheduler.actions).toEqual([]);
  });
});
