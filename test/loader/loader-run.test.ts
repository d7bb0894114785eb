/** Tests of Loader.run subscriptions on real edges: one at a time, and a new one after an unsubscribe or completion. */
import { join } from 'node:path';
import { Subject, type Subscription } from 'rxjs';
import { add, type ModelOp } from '../../src/core/model-op';
import type { AgentEvent, ModelPhase, ModelStatus } from '../../src/core/model-status';
import { waitFor } from '../../src/testing/wait';
import { name, spec } from '../helpers/fixtures';
import type { LoaderHarness } from '../helpers/loader-harness';
import { expectStrictlyInOrder, harnessesPerTest, isIdle } from './loader-checks';

const [a, b, c] = [name('a'), name('b'), name('c')];

/** A second subscription of `h.loader.run`, with its own op source and events. */
interface Rerun {
  readonly ops$: Subject<ModelOp>;
  readonly events: AgentEvent[];
  readonly error: () => unknown;
  readonly lastStatus: (model: string) => ModelStatus | undefined;
  readonly waitForPhase: (model: string, phase: ModelPhase) => Promise<void>;
}

describe('Loader.run subscriptions', () => {
  const subscriptions: Subscription[] = [];
  afterEach(() => {
    // Before the harnesses close (hooks run in the order they are declared): no run may outlive its harness.
    for (const subscription of subscriptions.splice(0)) subscription.unsubscribe();
  });
  const { started } = harnessesPerTest();

  const rerun = (h: LoaderHarness): Rerun => {
    const ops$ = new Subject<ModelOp>();
    const events: AgentEvent[] = [];
    let error: unknown;
    subscriptions.push(
      h.loader.run(ops$).subscribe({
        next: (e) => events.push(e),
        error: (e: unknown) => {
          error = e;
        },
      }),
    );
    const lastStatus = (model: string): ModelStatus | undefined =>
      events.flatMap((e) => (e._tag === 'Status' && e.status.modelName === model ? [e.status] : [])).at(-1);
    return {
      ops$,
      events,
      error: () => error,
      lastStatus,
      waitForPhase: (model, phase) =>
        waitFor(() => lastStatus(model)?.phase === phase, 10_000, `${model} to be ${phase} in the new run`),
    };
  };

  /**
   * Two workers: `a` downloads (held), `b` waits for the one download slot, `c` waits in the queue. Then the
   * first subscription ends.
   */
  const unsubscribeMidway = async (h: LoaderHarness): Promise<void> => {
    const held = h.hold('download', a);
    h.push(...(await Promise.all([a, b, c].map(async (m) => add(m, spec(await h.source(m)))))));
    await held.reached;
    h.stop();
  };

  it('takes up every model left unfinished when run is subscribed again after an unsubscribe', async () => {
    const h = await started({ downloadConcurrency: 1, loadConcurrency: 1 });
    await unsubscribeMidway(h);

    const run = rerun(h); // at once: a's aborted download may still be ending
    expect(isIdle(h.loader)).toBe(false);
    for (const model of [a, b, c]) await run.waitForPhase(model, 'Loaded');
    await waitFor(() => isIdle(h.loader), 10_000, 'idle');

    expect([...h.standIn.loaded].sort()).toEqual(['a', 'b', 'c']);
    expect(await h.modelDirEntries()).toEqual(['a', 'b', 'c']);
    for (const model of [a, b, c]) expectStrictlyInOrder(h.calls, model);
    expect(run.error()).toBeUndefined();
  });

  it('waits for the old subscription’s aborted work on a model before working on it again', async () => {
    const h = await started({ downloadConcurrency: 2, loadConcurrency: 1 });
    const held = h.hold('download', a);
    h.push(add(a, spec(await h.source('a'))));
    await held.reached;
    h.stop();

    const run = rerun(h); // a's install is still ending (it deletes its staging dir)
    await run.waitForPhase(a, 'Loaded');

    expect(h.callsOf(a, ['install', 'load'])).toEqual([
      'install:start',
      'install:fail',
      'install:start',
      'install:end',
      'load:start',
      'load:end',
    ]);
    expect(await h.modelDirEntries()).toEqual(['a']);
  });

  it('works on a model that was queued when the old subscription ended before it says idle', async () => {
    const h = await started({ downloadConcurrency: 1, loadConcurrency: 1 });
    await unsubscribeMidway(h);
    const aborted = () =>
      h.calls.some((call) => call.model === a && call.step === 'install' && call.at === 'fail');
    await waitFor(aborted, 10_000, "a's aborted install to end");
    const run = rerun(h);
    const s2 = spec(await h.source('c-v2'));
    const d = name('d');

    run.ops$.next(add(c, s2));
    run.ops$.next(add(d, spec(await h.source('d'))));
    await run.waitForPhase(d, 'Loaded');
    await waitFor(() => isIdle(h.loader), 10_000, 'idle');

    // Idle means done: c, queued when the first subscription ended, is not left behind.
    expect(run.lastStatus(c)).toMatchObject({ modelName: c, phase: 'Loaded', spec: s2 });
    expect([...h.standIn.loaded].sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('leaves a Failed model Failed in the new subscription until its spec is submitted again', async () => {
    const h = await started();
    const uri = join(h.storageDir, 'later');
    h.push(add(a, spec(uri)));
    await h.waitForPhase(a, 'Failed');
    h.stop();

    const run = rerun(h);
    expect(isIdle(h.loader)).toBe(true);
    expect(h.loader.statuses().get(a)?.phase).toBe('Failed');
    expect(run.events).toEqual([]);

    await h.source('later');
    run.ops$.next(add(a, spec(uri))); // a resync
    await run.waitForPhase(a, 'Loaded');
  });

  it('errors a second subscription made while the first is running, and the first goes on', async () => {
    const h = await started();
    const second = rerun(h);

    expect(String(second.error())).toContain('loader.run is already subscribed');
    h.push(add(a, spec(await h.source('a'))));
    await h.waitForPhase(a, 'Loaded');
    expect(second.events).toEqual([]);
  });

  it('runs again after a run completed', async () => {
    const h = await started();
    h.push(add(a, spec(await h.source('a'))));
    h.ops$.complete();
    await h.done;

    const run = rerun(h);
    run.ops$.next(add(b, spec(await h.source('b'))));
    await run.waitForPhase(b, 'Loaded');
    run.ops$.complete();
    expect(run.error()).toBeUndefined();
    expect([...h.standIn.loaded].sort()).toEqual(['a', 'b']);
  });
});
