import { failedRetryCapMs, failedRetryPolicy, findRepairs, type DesiredState } from '../../src/core/drift';
import { retryDelay } from '../../src/core/retry-policy';
import { add, remove } from '../../src/core/model-op';
import type { ModelPhase } from '../../src/core/model-status';
import type { ModelSpec } from '../../src/core/model-config';
import { name, spec } from '../helpers/fixtures';

const specA = spec('s3://b/a');
const state = (
  model: string,
  phase: ModelPhase,
  desired: ModelSpec | 'gone' = specA,
  settled = true,
): DesiredState => ({ name: name(model), desired: desired === 'gone' ? undefined : desired, phase, settled });

const repairsOf = (
  states: ReadonlyArray<DesiredState>,
  serverLoaded: ReadonlyArray<string>,
  before: ReadonlyArray<DesiredState> = states,
) =>
  findRepairs({
    before,
    after: states,
    serverLoaded: new Set(serverLoaded),
    retries: new Map(),
    now: 0,
    intervalMs: 1000,
  }).repairs;

describe('findRepairs', () => {
  it('re-submits the desired state of a settled Loaded model the server lost, and nothing for one it has', () => {
    expect(repairsOf([state('a', 'Loaded'), state('b', 'Loaded')], ['b'])).toEqual([
      { kind: 'reload-lost', name: name('a'), op: add(name('a'), specA) },
    ]);
  });

  it('leaves a model alone while it is worked on, or when it became Loaded during the index call', () => {
    expect(repairsOf([state('a', 'Loaded', specA, false)], [])).toEqual([]);
    expect(repairsOf([state('a', 'Loaded')], [], [state('a', 'Loading', specA, false)])).toEqual([]);
  });

  it('unloads a valid model name the server has and the loader never knew, sorted; leaves invalid names alone', () => {
    expect(repairsOf([state('a', 'Loaded')], ['a', 'z', 'm', '../etc'])).toEqual([
      { kind: 'unload-unlisted', name: name('m'), op: remove(name('m')) },
      { kind: 'unload-unlisted', name: name('z'), op: remove(name('z')) },
    ]);
    // Known before the call (it was being removed): not the repair's to unload.
    expect(repairsOf([], ['a'], [state('a', 'Unloading', 'gone', false)])).toEqual([]);
  });

  it('retries a Failed model (Add) and a failed unload (Remove)', () => {
    expect(repairsOf([state('a', 'Failed'), state('b', 'Failed', 'gone')], ['b'])).toEqual([
      { kind: 'retry-failed', name: name('a'), op: add(name('a'), specA) },
      { kind: 'retry-unload', name: name('b'), op: remove(name('b')) },
    ]);
  });

  it('forgets a failed unload of a name the server no longer lists and nothing of ours is on disk for', () => {
    // A server inventing a name at every resync and refusing every unload: retried for ever, each kept a record.
    const found = findRepairs({
      before: [],
      after: [state('ghost', 'Failed', 'gone'), { ...state('ours', 'Failed', 'gone'), leftOnDisk: true }],
      serverLoaded: new Set(),
      retries: new Map([[name('ghost'), { retries: 3, dueAt: 0 }]]),
      now: 0,
      intervalMs: 1000,
    });
    expect(found.forgotten).toEqual([name('ghost')]);
    expect(found.retries.has(name('ghost'))).toBe(false);
    // A model of ours on disk that the config no longer lists is still removed: its files go with its unload.
    expect(found.repairs).toEqual([{ kind: 'retry-unload', name: name('ours'), op: remove(name('ours')) }]);
    // Listed again: still ours to unload.
    expect(repairsOf([state('ghost', 'Failed', 'gone')], ['ghost'])).toEqual([
      { kind: 'retry-unload', name: name('ghost'), op: remove(name('ghost')) },
    ]);
  });

  it('does not retry a model the server refused for good: the same files would be refused again', () => {
    const rejected: DesiredState = { ...state('a', 'Failed'), rejected: true };
    expect(repairsOf([rejected, state('b', 'Failed')], [])).toEqual([
      { kind: 'retry-failed', name: name('b'), op: add(name('b'), specA) },
    ]);
  });

  it('backs the retries of a model that keeps failing off, doubling from one interval up to the cap', () => {
    let retries = new Map();
    const retriedAt: number[] = [];
    for (let now = 0; now <= 16_000; now += 1000) {
      const found = findRepairs({
        before: [],
        after: [state('a', 'Failed')],
        serverLoaded: new Set(),
        retries,
        now,
        intervalMs: 1000,
      });
      if (found.repairs.length > 0) retriedAt.push(now);
      retries = new Map(found.retries);
    }
    expect(retriedAt).toEqual([0, 1000, 3000, 7000, 15_000]);
  });

  it('keeps to the doubling when each resync reads the clock a few ms earlier or later than the one before', () => {
    // The resyncs come an interval apart, but `now` is read once the server's index has answered, which takes a
    // varying time: a retry due at 3007 found `now` 3001 and waited a whole interval more (1, 3, 4 … apart).
    const skewMs = [0, 7, 2, 1, 9, 3, 0, 4, 8, 1, 5, 2, 0, 6, 3, 1, 0];
    let retries = new Map();
    let lost = new Map();
    const retriedAt: number[] = [];
    const reloadedAt: number[] = [];
    skewMs.forEach((skew, resync) => {
      const found = findRepairs({
        before: [state('b', 'Loaded')],
        after: [state('a', 'Failed'), state('b', 'Loaded')],
        serverLoaded: new Set(),
        retries,
        lost,
        now: resync * 1000 + skew,
        intervalMs: 1000,
      });
      if (found.repairs.some((repair) => repair.kind === 'retry-failed')) retriedAt.push(resync);
      if (found.repairs.some((repair) => repair.kind === 'reload-lost')) reloadedAt.push(resync);
      retries = new Map(found.retries);
      lost = new Map(found.lost);
    });
    expect(retriedAt).toEqual([0, 1, 3, 7, 15]);
    expect(reloadedAt).toEqual([0, 1, 3, 7, 15]);
  });

  it('keeps the schedule while the retry runs, and forgets it once the model is Loaded', () => {
    const first = findRepairs({
      before: [],
      after: [state('a', 'Failed')],
      serverLoaded: new Set(),
      retries: new Map(),
      now: 0,
      intervalMs: 1000,
    });
    const busy = findRepairs({
      before: [],
      after: [state('a', 'Loading', specA, false)],
      serverLoaded: new Set(['a']),
      retries: first.retries,
      now: 500,
      intervalMs: 1000,
    });
    expect(busy.retries.get(name('a'))).toEqual({ retries: 1, dueAt: 1000 });
    const healed = findRepairs({
      before: [],
      after: [state('a', 'Loaded')],
      serverLoaded: new Set(['a']),
      retries: busy.retries,
      now: 900,
      intervalMs: 1000,
    });
    expect(healed.retries.size).toBe(0);
  });

  it("backs the reloads of a model the server keeps losing off, as a Failed model's retries, until it lists it", () => {
    // A server that loses it after each load, or a repository that registers it under another name: each resync
    // finds it Loaded and settled again (the reload succeeded) yet not listed.
    let lost = new Map();
    const reloadedAt: number[] = [];
    const resync = (now: number, serverLoaded: ReadonlyArray<string>) => {
      const found = findRepairs({
        before: [state('a', 'Loaded')],
        after: [state('a', 'Loaded')],
        serverLoaded: new Set(serverLoaded),
        retries: new Map(),
        lost,
        now,
        intervalMs: 1000,
      });
      if (found.repairs.some((repair) => repair.kind === 'reload-lost')) reloadedAt.push(now);
      lost = new Map(found.lost);
    };
    for (let now = 0; now <= 16_000; now += 1000) resync(now, ['a-under-another-name']);
    expect(reloadedAt).toEqual([0, 1000, 3000, 7000, 15_000]);
    expect(lost.get(name('a'))).toEqual({ retries: 5, dueAt: 31_000 });
    // Listed once: the server holds it, and a later loss (a server restarted empty) is reloaded at once.
    resync(17_000, ['a']);
    expect(lost.size).toBe(0);
    resync(18_000, []);
    expect(reloadedAt.at(-1)).toBe(18_000);
  });

  it('says which lost models wait out their reload, counts one shown lost as loaded, and says when the server lists it again', () => {
    const lost = new Map([[name('a'), { retries: 2, dueAt: 5000 }]]);
    const shownLost: DesiredState = { ...state('a', 'Retrying'), lost: true };
    const resync = (now: number, serverLoaded: ReadonlyArray<string>) =>
      findRepairs({
        before: [shownLost],
        after: [shownLost],
        serverLoaded: new Set(serverLoaded),
        retries: new Map(),
        lost,
        now,
        intervalMs: 1000,
      });
    const waiting = resync(2000, []);
    expect(waiting.repairs).toEqual([]);
    expect(waiting.waiting).toEqual([{ name: name('a'), reload: { retries: 2, dueAt: 5000 } }]);
    expect(waiting.relisted).toEqual([]);
    // Its reload due: shown lost (Retrying), it is still the loaded model the server lost.
    expect(resync(5000, []).repairs.map((repair) => repair.kind)).toEqual(['reload-lost']);
    const listed = resync(3000, ['a']);
    expect(listed.relisted).toEqual([name('a')]);
    expect(listed.lost.size).toBe(0);
  });
});

describe('failedRetryPolicy', () => {
  const failedRetryDelay = (retries: number, intervalMs: number): number =>
    retryDelay(failedRetryPolicy(intervalMs), retries);

  it('is the interval, doubling, capped at failedRetryCapMs or the interval when that is longer', () => {
    expect([1, 2, 3].map((n) => failedRetryDelay(n, 60_000))).toEqual([60_000, 120_000, 240_000]);
    expect(failedRetryDelay(10, 60_000)).toBe(failedRetryCapMs);
    expect(failedRetryDelay(5, 2 * failedRetryCapMs)).toBe(2 * failedRetryCapMs);
    expect(failedRetryDelay(40, 0)).toBe(0);
  });
});
