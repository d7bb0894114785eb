/** Tests of the loader's hooks for drift repair (desiredStates, noteServerIndex) and graceful shutdown (drain). */
import pino from 'pino';
import { Subject, type Subscription } from 'rxjs';
import { httpStatusError } from '../../src/core/errors';
import { kubeEventOf } from '../../src/core/kube-event';
import { add, remove, type ModelOp } from '../../src/core/model-op';
import type { AgentEvent } from '../../src/core/model-status';
import { createLoader, type Loader } from '../../src/loader/loader';
import { waitFor } from '../../src/testing/wait';
import { name, spec } from '../helpers/fixtures';
import { recordingPorts, type RecordingPorts } from './recording-ports';

const [a, stray] = [name('a'), name('stray')];
const specA = spec('s3://b/a');
const nothingInPlace = { onDisk: new Map(), loaded: new Set<string>(), unconfirmed: new Set<string>() };

const running = (recording: RecordingPorts = recordingPorts(), log = pino({ level: 'silent' })) => {
  const loader: Loader = createLoader(
    {
      ...recording.ports,
      log,
      downloadConcurrency: 1,
      loadConcurrency: 1,
      retry: { baseMs: 1, maxMs: 1, maxAttempts: 1 },
    },
    nothingInPlace,
  );
  const ops$ = new Subject<ModelOp>();
  const events: AgentEvent[] = [];
  const subscription = loader.run(ops$).subscribe((event) => events.push(event));
  const phaseOf = (model: string) => loader.statuses().get(name(model))?.phase;
  return { loader, ops$, events, subscription, calls: recording.calls, phaseOf };
};

describe('the loader under drift repair', () => {
  const subscriptions: Subscription[] = [];
  afterEach(() => subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe()));

  it('loads a settled model again on the same spec once the server is noted to have lost it, and not before', async () => {
    const r = running();
    subscriptions.push(r.subscription);
    r.ops$.next(add(a, specA));
    await waitFor(() => r.phaseOf('a') === 'Loaded', 5000, 'a loaded');
    expect(r.loader.desiredStates()).toEqual([{ name: a, desired: specA, phase: 'Loaded', settled: true }]);
    const before = r.calls.length;
    r.ops$.next(add(a, specA));
    expect(r.calls.length).toBe(before); // the same spec on a model in place is nothing
    r.loader.noteServerIndex(a, false);
    r.ops$.next(add(a, specA));
    await waitFor(() => r.calls.length > before && r.phaseOf('a') === 'Loaded', 5000, 'a loaded again');
    expect(r.calls.slice(before)).toEqual(['journal starting a', 'load a', 'journal confirmed a']);
  });

  it('shows a loaded model the server lost as Retrying while its reload waits, and Loaded again once the server lists it or it is reloaded', async () => {
    const r = running();
    subscriptions.push(r.subscription);
    r.ops$.next(add(a, specA));
    await waitFor(() => r.phaseOf('a') === 'Loaded', 5000, 'a loaded');
    r.loader.noteLost(a, { reloads: 2, nextReloadInMs: 90_000 });
    expect(r.loader.statuses().get(a)).toMatchObject({
      phase: 'Retrying',
      errorKind: 'not-found',
      attempt: 2,
    });
    expect(r.loader.statuses().get(a)?.reason).toMatch(/no longer lists the model.*in 90 s/);
    // Still the loaded model the server lost, for the next resync.
    expect(r.loader.desiredStates()).toEqual([
      { name: a, desired: specA, phase: 'Retrying', settled: true, lost: true },
    ]);
    const loadsBefore = r.calls.filter((call) => call === 'load a').length;
    r.loader.noteLost(a, undefined); // listed again
    expect(r.loader.statuses().get(a)?.phase).toBe('Loaded');
    // Said as what it is: listed again, not a load of modelsync's (no ModelLoaded Event, no "model loaded" line).
    const shown = r.events.at(-1);
    expect(shown).toMatchObject({ _tag: 'Status', status: { phase: 'Loaded', listedAgain: true } });
    expect(kubeEventOf(shown!)).toBeUndefined();
    expect(r.calls.filter((call) => call === 'load a')).toHaveLength(loadsBefore);
    expect(r.loader.desiredStates()).toEqual([{ name: a, desired: specA, phase: 'Loaded', settled: true }]);
    // Lost again, then reloaded by the resync: Loaded, no longer shown lost.
    r.loader.noteLost(a, { reloads: 3, nextReloadInMs: 1000 });
    const before = r.calls.length;
    r.loader.noteServerIndex(a, false);
    r.ops$.next(add(a, specA));
    await waitFor(() => r.calls.length > before && r.phaseOf('a') === 'Loaded', 5000, 'a loaded again');
    expect(r.loader.desiredStates()).toEqual([{ name: a, desired: specA, phase: 'Loaded', settled: true }]);
  });

  it('unloads a model it never knew once the server is noted to have it loaded', async () => {
    const r = running();
    subscriptions.push(r.subscription);
    r.ops$.next(remove(stray));
    expect(r.loader.desiredStates()).toEqual([]); // a Remove of a model never seen is nothing
    r.loader.noteServerIndex(stray, true);
    r.ops$.next(remove(stray));
    await waitFor(() => r.calls.includes('unload stray'), 5000, 'stray unloaded');
    await waitFor(() => r.loader.desiredStates().length === 0, 5000, 'stray forgotten');
  });

  it('forgets a failed unload of a model it never knew once the server no longer lists it, and no other', async () => {
    const refused = () => httpStatusError('model server unload of "stray" (http://127.0.0.1:8000)', 400);
    const r = running(recordingPorts({ unload: { stray: [refused()], a: [refused()] } }));
    subscriptions.push(r.subscription);
    r.loader.noteServerIndex(stray, true);
    r.ops$.next(remove(stray));
    r.ops$.next(add(a, specA));
    await waitFor(() => r.phaseOf('stray') === 'Failed' && r.phaseOf('a') === 'Loaded', 5000, 'stray failed');
    r.ops$.next(remove(a)); // its files are ours: removed once its unload goes through
    await waitFor(() => r.phaseOf('a') === 'Failed', 5000, 'a failed');
    expect(r.loader.desiredStates()).toEqual([
      { name: stray, desired: undefined, phase: 'Failed', settled: true },
      { name: a, desired: undefined, phase: 'Failed', settled: true, leftOnDisk: true },
    ]);
    r.loader.forgetUnlisted(stray);
    r.loader.forgetUnlisted(a); // files of ours on disk: kept, for the resync to retry
    expect(r.loader.desiredStates().map((state) => state.name)).toEqual([a]);
    expect(r.loader.statuses().has(stray)).toBe(false);
    expect(r.events.at(-1)).toMatchObject({ _tag: 'Status', status: { modelName: stray, phase: 'Removed' } });
  });

  it('notes nothing while no run is subscribed', () => {
    const r = running();
    r.subscription.unsubscribe();
    r.loader.noteServerIndex(stray, true);
    expect(r.loader.desiredStates()).toEqual([]);
  });
});

describe('Loader.drain', () => {
  it('aborts a download, lets a load call in flight finish, then resolves', async () => {
    const recording = recordingPorts();
    let finishLoad: () => void = () => undefined;
    let loadCalled: () => void = () => undefined;
    const loadStarted = new Promise<void>((resolve) => (loadCalled = resolve));
    const { download } = recording.ports;
    const r = running({
      ...recording,
      ports: {
        ...recording.ports,
        server: {
          ...recording.ports.server,
          load: () => {
            loadCalled();
            return new Promise<void>((resolve) => (finishLoad = resolve));
          },
        },
        // b's download never ends by itself.
        download: (uri, dir, signal) =>
          uri.endsWith('/b')
            ? new Promise((_resolve, reject) =>
                signal.addEventListener('abort', () => reject(signal.reason as Error)),
              )
            : download(uri, dir, signal),
      },
    });
    r.ops$.next(add(a, specA));
    r.ops$.next(add(name('b'), spec('s3://b/b')));
    await loadStarted;
    let drained = false;
    const drain = r.loader.drain().then(() => (drained = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(drained).toBe(false); // a's load call is still in flight
    finishLoad();
    await drain;
    expect(r.phaseOf('a')).toBe('Loaded');
    expect(r.phaseOf('b')).toBe('Downloading'); // aborted quietly: nothing more is reported while shutting down
    r.subscription.unsubscribe();
  });

  it('says nothing of a newer desired state when a load in flight fails during the drain', async () => {
    const recording = recordingPorts();
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    let failLoad: () => void = () => undefined;
    let loadCalled: () => void = () => undefined;
    const loadStarted = new Promise<void>((resolve) => (loadCalled = resolve));
    const r = running(
      {
        ...recording,
        ports: {
          ...recording.ports,
          server: {
            ...recording.ports.server,
            load: () => {
              loadCalled();
              return new Promise<void>(
                (_resolve, reject) =>
                  (failLoad = () => reject(httpStatusError('model server load', 500, 'x'))),
              );
            },
          },
        },
      },
      log,
    );
    r.ops$.next(add(a, specA));
    await loadStarted;
    const drain = r.loader.drain();
    failLoad();
    await drain;
    expect(lines.filter((line) => line.includes('superseded'))).toEqual([]);
    r.subscription.unsubscribe();
  });

  it('sends no load call waiting for a load slot, only lets the one in flight finish', async () => {
    const recording = recordingPorts();
    let finishLoad: () => void = () => undefined;
    let loadCalled: () => void = () => undefined;
    const loadStarted = new Promise<void>((resolve) => (loadCalled = resolve));
    const { server } = recording.ports;
    const r = running({
      ...recording,
      ports: {
        ...recording.ports,
        server: {
          ...server,
          // a's load hangs until the test ends it; b's would be sent once a's slot is free.
          load: (model, replacing, signal) =>
            model === a
              ? (recording.calls.push(`load ${model}`),
                loadCalled(),
                new Promise<void>((resolve) => (finishLoad = resolve)))
              : server.load(model, replacing, signal),
        },
      },
    });
    r.ops$.next(add(a, specA));
    r.ops$.next(add(name('b'), spec('s3://b/b')));
    await loadStarted;
    await waitFor(() => r.phaseOf('b') === 'Loading', 5000, 'b waiting for the load slot');
    const drain = r.loader.drain();
    finishLoad();
    await drain;
    expect(r.calls.filter((call) => call.startsWith('load'))).toEqual(['load a']);
    r.subscription.unsubscribe();
  });

  it('resolves at once when no run is subscribed', async () => {
    const r = running();
    r.subscription.unsubscribe();
    await expect(r.loader.drain()).resolves.toBeUndefined();
  });
});
