import pino from 'pino';
import type { Observable } from 'rxjs';
import type { DesiredState, RepairKind } from '../../src/core/drift';
import type { ModelName } from '../../src/core/model-name';
import { add, remove } from '../../src/core/model-op';
import type { ModelPhase } from '../../src/core/model-status';
import { repairDrift, type ResyncTrigger } from '../../src/pipeline/repair-drift';
import { name, spec } from '../helpers/fixtures';
import { LogSink } from '../helpers/log-sink';
import { runMarbles } from '../helpers/marbles';

const specA = spec('s3://b/a');
const state = (model: string, phase: ModelPhase, desired = specA, settled = true): DesiredState => ({
  name: name(model),
  desired,
  phase,
  settled,
});

/** The loader's side, fixed, recording what the operator notes; the log and telemetry, recorded. */
const world = (states: ReadonlyArray<DesiredState>) => {
  const noted: Array<[ModelName, boolean]> = [];
  const lostNoted: Array<[ModelName, unknown]> = [];
  const forgotten: ModelName[] = [];
  const runs: ResyncTrigger[] = [];
  const repairs: RepairKind[] = [];
  const sink = new LogSink();
  return {
    noted,
    lostNoted,
    forgotten,
    runs,
    repairs,
    sink,
    options: (serverIndex: () => Observable<ReadonlySet<string>>) => ({
      records: {
        desiredStates: () => states,
        noteServerIndex: (model: ModelName, loaded: boolean) => void noted.push([model, loaded]),
        noteLost: (model: ModelName, wait: unknown) => void lostNoted.push([model, wait]),
        forgetUnlisted: (model: ModelName) => void forgotten.push(model),
      },
      serverIndex,
      intervalMs: 10,
      log: pino({ level: 'info' }, sink),
      telemetry: {
        resyncRun: (trigger: ResyncTrigger) => void runs.push(trigger),
        repair: (kind: RepairKind) => void repairs.push(kind),
      },
    }),
  };
};

describe('repairDrift', () => {
  it('turns each resync into the ops that re-submit what drifted, noting the server facts first, logging and counting each', () => {
    const w = world([state('a', 'Loaded'), state('b', 'Loaded')]);
    runMarbles(({ cold, expectObservable }) => {
      const index = () => cold('--i|', { i: new Set(['b', 'stray']) });
      // One interval (10) apart: a model lost again after its reload is reloaded no sooner (its backoff).
      expectObservable(
        cold<ResyncTrigger>('t---------s', { t: 'timer', s: 'signal' }).pipe(repairDrift(w.options(index))),
      ).toBe('--(ax)------(ax)', { a: add(name('a'), specA), x: remove(name('stray')) });
    });
    expect(w.runs).toEqual(['timer', 'signal']);
    expect(w.repairs).toEqual(['reload-lost', 'unload-unlisted', 'reload-lost', 'unload-unlisted']);
    expect(w.noted.slice(0, 2)).toEqual([
      [name('a'), false],
      [name('stray'), true],
    ]);
    expect(w.sink.lines[0]).toMatchObject({
      model: 'a',
      repair: 'reload-lost',
      msg: expect.stringContaining('lost the model') as unknown,
    });
  });

  it('reloads a model the server keeps losing on a backoff, with a warn line that says so, unloading strays each resync', () => {
    // A repository that registers "a" under another name: each reload brings the stray back, never "a".
    const w = world([state('a', 'Loaded')]);
    runMarbles(({ cold, expectObservable }) => {
      const index = () => cold('-i|', { i: new Set(['a-elsewhere']) });
      // Resyncs at 0, 10, 20, 30, 40 (the interval is 10): reloads at 0 and 10, then after 2 intervals, at 30.
      expectObservable(
        cold<ResyncTrigger>('t---------t---------t---------t---------t', { t: 'timer' }).pipe(
          repairDrift(w.options(index)),
        ),
      ).toBe('-(ax)------(ax)------x---------(ax)------x', {
        a: add(name('a'), specA),
        x: remove(name('a-elsewhere')),
      });
    });
    expect(w.repairs.filter((kind) => kind === 'reload-lost')).toHaveLength(3);
    const warned = w.sink.withMessage('keeps losing the model');
    expect(warned.map((line) => line.reloads)).toEqual([2, 3]);
    expect(warned[0]).toMatchObject({ model: 'a', level: 40, nextReloadInMs: 20 });
    // While it waits out the backoff, the loader hears it is lost (so /status does not say Loaded) and until when.
    expect(w.lostNoted).toEqual([
      [name('a'), { reloads: 2, nextReloadInMs: 10 }],
      [name('a'), { reloads: 3, nextReloadInMs: 30 }],
    ]);
  });

  it('has the loader forget a failed unload of a model the server no longer lists, retrying none', () => {
    const w = world([{ ...state('ghost', 'Failed'), desired: undefined }]);
    runMarbles(({ cold, expectObservable }) => {
      const index = () => cold('-i|', { i: new Set<string>() });
      expectObservable(cold<ResyncTrigger>('t', { t: 'timer' }).pipe(repairDrift(w.options(index)))).toBe('');
    });
    expect(w.forgotten).toEqual([name('ghost')]);
    expect(w.repairs).toEqual([]);
  });

  it('drops a trigger that comes while the server is being asked', () =>
    runMarbles(({ cold, expectObservable }) => {
      const w = world([state('a', 'Loaded')]);
      expectObservable(
        cold<ResyncTrigger>('tt', { t: 'timer' }).pipe(
          repairDrift(w.options(() => cold('---i|', { i: new Set<string>() }))),
        ),
      ).toBe('---a', { a: add(name('a'), specA) });
    }));

  it('logs a server that does not answer and goes on with the next resync', () => {
    const w = world([state('a', 'Loaded')]);
    runMarbles(({ cold, expectObservable }) => {
      let calls = 0;
      const index = () =>
        calls++ === 0
          ? cold<ReadonlySet<string>>('-#', undefined, new Error('ECONNREFUSED'))
          : cold('-i|', { i: new Set<string>() });
      expectObservable(cold<ResyncTrigger>('t--t', { t: 'timer' }).pipe(repairDrift(w.options(index)))).toBe(
        '----a',
        {
          a: add(name('a'), specA),
        },
      );
    });
    expect(w.sink.withMessage('the model server did not list its models')).toHaveLength(1);
  });

  it('completes without emitting when there is no trigger', () =>
    runMarbles(({ cold, expectObservable }) => {
      const w = world([state('a', 'Loaded')]);
      expectObservable(
        cold<ResyncTrigger>('|').pipe(repairDrift(w.options(() => cold('i|', { i: new Set<string>() })))),
      ).toBe('|');
    }));

  it('passes an error of the triggers through', () =>
    runMarbles(({ cold, expectObservable }) => {
      const w = world([]);
      expectObservable(
        cold<ResyncTrigger>('#').pipe(repairDrift(w.options(() => cold('i|', { i: new Set<string>() })))),
      ).toBe('#');
    }));

  it('unsubscribes from the triggers and from a server call in flight when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const w = world([state('a', 'Loaded')]);
      const triggers = cold<ResyncTrigger>('t-----', { t: 'timer' });
      const index = cold<ReadonlySet<string>>('----i|', { i: new Set<string>() });
      expectObservable(triggers.pipe(repairDrift(w.options(() => index))), '^--!').toBe('');
      expectSubscriptions(triggers.subscriptions).toBe('^--!');
      expectSubscriptions(index.subscriptions).toBe('^--!');
    }));
});
