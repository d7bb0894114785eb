/** Marble tests of applyModelOps: ops go to the loader as they come, and what it reports comes out. */
import { map, mergeMap, of, type Observable } from 'rxjs';
import { add, remove, type ModelOp } from '../../src/core/model-op';
import { statusEvent, type AgentEvent } from '../../src/core/model-status';
import { applyModelOps, type OpRunner } from '../../src/pipeline/apply-model-ops';
import { name, spec } from '../helpers/fixtures';
import { runMarbles } from '../helpers/marbles';

const s1 = spec('s3://models/m1');
const ops: Record<string, ModelOp> = {
  a: add(name('m1'), s1),
  r: remove(name('m1')),
  b: add(name('m2'), s1),
};

const loaded = (model: string): AgentEvent =>
  statusEvent({ modelName: name(model), phase: 'Loaded', spec: s1 });
const removed = (model: string): AgentEvent => statusEvent({ modelName: name(model), phase: 'Removed' });
const events: Record<string, AgentEvent> = { x: loaded('m1'), y: removed('m1'), z: loaded('m2') };

/** A loader stand-in whose work is instant: an Add reports Loaded, a Remove reports Removed. */
const instantRunner = (): OpRunner & { runs: number } => {
  const runner = {
    runs: 0,
    run: (op$: Observable<ModelOp>): Observable<AgentEvent> => {
      runner.runs++;
      return op$.pipe(map((op) => (op._tag === 'Add' ? loaded(op.modelName) : removed(op.modelName))));
    },
  };
  return runner;
};

describe('applyModelOps', () => {
  it('emits what the loader reports for each op when ops arrive', () =>
    runMarbles(({ cold, expectObservable }) => {
      const op$ = cold('-a-b--r-|', ops);
      expectObservable(op$.pipe(applyModelOps(instantRunner()))).toBe('-x-z--y-|', events);
    }));

  it('emits several events for one op when the loader reports several', () =>
    runMarbles(({ cold, expectObservable }) => {
      const runner: OpRunner = {
        run: (op$) =>
          op$.pipe(
            mergeMap((op) =>
              of(
                statusEvent({ modelName: op.modelName, phase: 'Downloading', spec: s1 }),
                loaded(op.modelName),
              ),
            ),
          ),
      };
      const downloading = statusEvent({ modelName: name('m1'), phase: 'Downloading', spec: s1 });
      expectObservable(cold('-a---|', ops).pipe(applyModelOps(runner))).toBe('-(dx)|', {
        ...events,
        d: downloading,
      });
    }));

  it('completes without emitting when there are no ops', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<ModelOp>('|').pipe(applyModelOps(instantRunner()))).toBe('|');
    }));

  it('passes an error of the op source through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('-a-#', ops).pipe(applyModelOps(instantRunner()))).toBe('-x-#', events);
    }));

  it('passes an error of the loader through', () =>
    runMarbles(({ cold, expectObservable }) => {
      const failing: OpRunner = { run: () => cold('--#', {}, new Error('loader broke')) };
      expectObservable(cold('-a-b|', ops).pipe(applyModelOps(failing))).toBe(
        '--#',
        {},
        new Error('loader broke'),
      );
    }));

  it('stops taking ops when unsubscribed', () =>
    runMarbles(({ hot, expectObservable, expectSubscriptions }) => {
      const op$ = hot('-a-b-r-a-', ops);
      expectObservable(op$.pipe(applyModelOps(instantRunner())), '^----!').toBe('-x-z-', events);
      expectSubscriptions(op$.subscriptions).toBe('^----!');
    }));

  it('subscribes the op source once, through the loader, only when subscribed', () => {
    const runner = instantRunner();
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const op$ = cold('-a-b|', ops);
      const applied = op$.pipe(applyModelOps(runner));
      expect(op$.subscriptions).toEqual([]);

      expectObservable(applied).toBe('-x-z|', events);
      expectSubscriptions(op$.subscriptions).toBe('^---!');
    });
    expect(runner.runs).toBe(1);
  });
});
