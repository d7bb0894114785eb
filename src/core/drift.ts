/** Drift repair: which models a resync re-submits, from the loader's records and the model server's index. */
import type { ModelSpec } from './model-config';
import { modelNameProblem, type ModelName } from './model-name';
import { add, remove, type ModelOp } from './model-op';
import type { ModelPhase } from './model-status';
import { retryDelay, type RetryPolicy } from './retry-policy';

/** One model as the loader holds it: what is wanted, where it stands, and whether it is left alone now. */
export interface DesiredState {
  readonly name: ModelName;
  /** The spec wanted; undefined when the model should be gone. */
  readonly desired: ModelSpec | undefined;
  readonly phase: ModelPhase;
  /** Nothing is queued, running or waiting out a retry backoff for it: a repair cannot race its own work. */
  readonly settled: boolean;
  /**
   * Failed because the model server refused to load its files for good (a bad config, a model that raises): the
   * same files would be refused again, so a resync does not retry it; a new spec does.
   */
  readonly rejected?: boolean;
  /**
   * Loaded, but the server lost it and its reload waits out the backoff of `LostReloads`: shown `Retrying`, still the
   * loaded model whose reload the resync makes.
   */
  readonly lost?: boolean;
  /** Unwanted (`desired` undefined), yet files of ours for it are in the model dir: its removal must delete them. */
  readonly leftOnDisk?: boolean;
}

/** Why a resync re-submits a model (the Telemetry port's `repair` kinds). */
export type RepairKind = 'reload-lost' | 'unload-unlisted' | 'retry-failed' | 'retry-unload';

/** One repair: the model, why, and the op that re-submits its desired state. */
export interface Repair {
  readonly kind: RepairKind;
  readonly name: ModelName;
  readonly op: ModelOp;
}

/** The retries of a Failed model so far, and when the next one is due (scheduler time). */
export interface FailedRetry {
  readonly retries: number;
  readonly dueAt: number;
}

/** Failed models' retry schedules by name: what the repair step carries from one resync to the next. */
export type FailedRetries = ReadonlyMap<ModelName, FailedRetry>;

/**
 * The reloads of models the server lost, by name, on the schedule of a Failed model's retries: a server that keeps
 * losing one (or a repository that registers it under another name) gets a load per backoff, not per resync.
 * Forgotten once the server lists the model.
 */
export type LostReloads = ReadonlyMap<ModelName, FailedRetry>;

/** A lost model's reload as the loader shows it: reloads so far, and the wait before the next. */
export interface LostWait {
  readonly reloads: number;
  readonly nextReloadInMs: number;
}

/** The cap of the wait between two retries of a Failed model, unless the resync interval is longer. */
export const failedRetryCapMs = 15 * 60_000;

/**
 * How a resync retries a Failed model: for as long as it stays Failed (a storage or server outage may last hours),
 * one resync interval first, doubling with each retry that failed again, capped at `failedRetryCapMs` (or the
 * interval, if longer). No jitter: the resync timer paces them.
 */
export const failedRetryPolicy = (intervalMs: number): RetryPolicy => ({
  maxAttempts: Infinity,
  baseMs: intervalMs,
  maxMs: Math.max(intervalMs, failedRetryCapMs),
  jitter: 'none',
});

/** The schedule after one more retry that is due now. */
const nextRetry = (retry: FailedRetry, now: number, intervalMs: number): FailedRetry => ({
  retries: retry.retries + 1,
  dueAt: now + retryDelay(failedRetryPolicy(intervalMs), retry.retries + 1),
});

/**
 * Whether a retry or reload due at `dueAt` is made by the resync at `now`: the resync nearest to it does, not the
 * first at or after it. A resync reads the clock once the server's index has answered, a few ms sooner or later
 * each time: a retry due at 3007 found 3001 and waited a whole interval more (1, 3, 4 … intervals apart).
 */
const isDue = (dueAt: number, now: number, intervalMs: number): boolean => dueAt - now <= intervalMs / 2;

/** The model names a start or a resync acts on now, out of many, and how many are left for later. */
export interface TakenNames {
  readonly taken: ReadonlyArray<ModelName>;
  readonly deferred: number;
}

/**
 * At most `room` of `names`, the first by name (so each start and resync picks the same ones, and a set of real
 * names shrinks resync by resync); a name no config could list (not a valid model name) is not ours to act on:
 * neither taken nor counted.
 */
export const takeByName = (names: Iterable<string>, room: number): TakenNames => {
  const valid = [...names].filter((name): name is ModelName => modelNameProblem(name) === undefined);
  const taken = valid.sort().slice(0, Math.max(0, room));
  return { taken, deferred: valid.length - taken.length };
};

/** What the server's index and the loader's records say at one resync. */
export interface DriftInput {
  /** The loader's records just before the server was asked (a model loaded meanwhile is not counted lost). */
  readonly before: ReadonlyArray<DesiredState>;
  /** The loader's records once the server answered. */
  readonly after: ReadonlyArray<DesiredState>;
  /** The models the server reports loaded. */
  readonly serverLoaded: ReadonlySet<string>;
  readonly retries: FailedRetries;
  /** The reloads of lost models so far (`findRepairs`' last `lost`); default none. */
  readonly lost?: LostReloads;
  /** Scheduler time now. */
  readonly now: number;
  readonly intervalMs: number;
  /** At most this many unloads in progress (`--max-unlisted-unloads`, default `defaultMaxUnlistedUnloads`). */
  readonly maxUnlistedUnloads?: number;
}

/**
 * The default cap of unloads of unlisted models one resync leaves in progress: a server whose index invents
 * thousands of names gets a hundred unloads a resync, not thousands.
 */
export const defaultMaxUnlistedUnloads = 100;

/** The repairs of one resync and the Failed models' retry schedules to carry to the next. */
export interface DriftRepairs {
  readonly repairs: ReadonlyArray<Repair>;
  readonly retries: FailedRetries;
  /** The lost models' reload schedules to carry to the next resync; a schedule's `retries` counts this one's. */
  readonly lost: LostReloads;
  /** Unloads (of unlisted models, and due retries of failed unloads) left for a later resync by the cap. */
  readonly deferred: number;
  /** Lost models whose reload is not due yet, with its schedule: the loader shows them lost, not Loaded. */
  readonly waiting: ReadonlyArray<{ readonly name: ModelName; readonly reload: FailedRetry }>;
  /** Models shown lost that the server lists again: Loaded once more. */
  readonly relisted: ReadonlyArray<ModelName>;
  /** Failed unloads of models now gone from the server, nothing of ours on disk: for the loader to forget. */
  readonly forgotten: ReadonlyArray<ModelName>;
}

/** Settled and loaded as far as the loader knows: Loaded, or shown lost while its reload waits. */
const isSettledLoaded = (state: DesiredState): boolean =>
  state.settled && (state.phase === 'Loaded' || state.lost === true);

/**
 * The repairs a resync makes, each re-submitting a desired state the loader already holds (never a stale one):
 * - `reload-lost`: Loaded (before and after the index call; or shown lost) and settled, yet the server does not
 *   list it, and its reload is due: lost again after a reload, it waits as a Failed model does
 *   (`failedRetryPolicy`), and is told `waiting` meanwhile;
 * - `unload-unlisted`: the server lists it, and the loader knew nothing of it before and after the call (a model
 *   the config lists always has a record while it is wanted); a name no config could list is left alone;
 * - `retry-failed` / `retry-unload`: Failed and settled, and its retry is due (`failedRetryPolicy`);
 *   not a model the server `rejected` (its files would be refused again);
 * - `forgotten`: a failed unload (Failed, settled, not wanted) of a model the server no longer lists and with nothing
 *   of ours on disk is done: no retry (a server inventing names and refusing every unload left one record each, for
 *   good); one with files of ours on disk is retried, the unload deleting them.
 * At most `maxUnlistedUnloads` unloads are in progress after a resync, the due `retry-unload`s first; the rest are
 * deferred (docs/reliability.md, "Drift repair"). A model that is not settled is being worked on: its own retries
 * and backoff stand.
 */
export const findRepairs = (input: DriftInput): DriftRepairs => {
  const { after, serverLoaded, now, intervalMs } = input;
  const loadedBefore = new Set(input.before.filter(isSettledLoaded).map((state) => state.name));
  const known = new Set([...input.before, ...after].map((state) => state.name));
  const repairs: Repair[] = [];
  const retries = new Map<ModelName, FailedRetry>();
  const lost = new Map<ModelName, FailedRetry>();
  const dueUnloads: Array<{ readonly name: ModelName; readonly retry: FailedRetry }> = [];
  const waiting: Array<{ readonly name: ModelName; readonly reload: FailedRetry }> = [];
  const relisted: ModelName[] = [];
  const forgotten: ModelName[] = [];
  for (const state of after) {
    const { name, desired } = state;
    // Kept until the server lists the model: a reload that fails (Failed, retried) and loads is not yet kept.
    const reload = input.lost?.get(name);
    const listed = isSettledLoaded(state) && serverLoaded.has(name);
    if (reload !== undefined && !listed) lost.set(name, reload);
    if (listed && state.lost === true) relisted.push(name);
    if (state.phase === 'Failed' && state.settled && state.rejected === true) continue;
    if (state.phase === 'Failed' && state.settled) {
      if (desired === undefined && state.leftOnDisk !== true && !serverLoaded.has(name)) {
        forgotten.push(name);
        continue;
      }
      const retry = input.retries.get(name) ?? { retries: 0, dueAt: now };
      if (!isDue(retry.dueAt, now, intervalMs)) {
        retries.set(name, retry);
        continue;
      }
      if (desired === undefined) {
        dueUnloads.push({ name, retry }); // within the cap of unloads, below
        continue;
      }
      retries.set(name, nextRetry(retry, now, intervalMs));
      repairs.push({ kind: 'retry-failed', name, op: add(name, desired) });
      continue;
    }
    // A model still being worked on after a retry keeps its schedule, so failing again waits longer.
    const schedule = input.retries.get(name);
    if (schedule !== undefined && !state.settled) retries.set(name, schedule);
    if (
      isSettledLoaded(state) &&
      desired !== undefined &&
      loadedBefore.has(name) &&
      !serverLoaded.has(name)
    ) {
      const due = reload ?? { retries: 0, dueAt: now };
      if (!isDue(due.dueAt, now, intervalMs)) {
        waiting.push({ name, reload: due });
        continue;
      }
      lost.set(name, nextRetry(due, now, intervalMs));
      repairs.push({ kind: 'reload-lost', name, op: add(name, desired) });
    }
  }
  const unloading = after.filter((state) => state.desired === undefined && !state.settled).length;
  const room = Math.max(0, (input.maxUnlistedUnloads ?? defaultMaxUnlistedUnloads) - unloading);
  const retried = takeByName(
    dueUnloads.map(({ name }) => name),
    room,
  );
  for (const { name, retry } of dueUnloads) retries.set(name, retry); // a deferred retry stays due
  for (const name of retried.taken) {
    retries.set(name, nextRetry(retries.get(name)!, now, intervalMs));
    repairs.push({ kind: 'retry-unload', name, op: remove(name) });
  }
  const unlisted = takeByName(
    [...serverLoaded].filter((name) => !known.has(name as ModelName)),
    room - retried.taken.length,
  );
  for (const name of unlisted.taken) repairs.push({ kind: 'unload-unlisted', name, op: remove(name) });
  const deferred = retried.deferred + unlisted.deferred;
  return { repairs, retries, lost, deferred, waiting, relisted, forgotten };
};
