/** The loader: makes the model dir and the server match each model's latest desired state (see docs/architecture.md). */
import { asyncScheduler, BehaviorSubject, distinctUntilChanged, Observable, type SchedulerLike } from 'rxjs';
import { inPlaceSnapshot, type InPlace } from '../core/in-place';
import type { ModelName } from '../core/model-name';
import type { DesiredState, LostWait } from '../core/drift';
import type { ModelOp } from '../core/model-op';
import type { AgentEvent, ModelStatus } from '../core/model-status';
import { noTelemetry, type Telemetry } from '../ports';
import type { RetryPolicy } from '../core/retry-policy';
import { createRun, type Run, type RunContext } from './loader-run';
import { newRecord, type ModelRecord } from './model-record';
import { createSlots, type Slots } from '../core/slots';
import { createContentSharing } from './content-sharing';
import type { ContentRegistry } from './content-registry';
import type { ReconcileEffects } from './reconcile';
import { guardedTelemetry } from './guarded-telemetry';

export { unlistedUnloadWorkers } from './loader-run';

/** The ports and the log the steps act through (`ReconcileEffects`), and how the loader runs them. */
export interface LoaderDeps extends Pick<
  ReconcileEffects,
  'store' | 'journal' | 'server' | 'download' | 'log'
> {
  readonly downloadConcurrency: number;
  readonly loadConcurrency: number;
  /** How a step's transient failure is retried: `maxAttempts` of one step before the model is marked Failed. */
  readonly retry: RetryPolicy;
  /** The jitter source of retry delays; Math.random by default. */
  readonly random?: () => number;
  /** Where retry delays are timed; asyncScheduler by default. */
  readonly scheduler?: SchedulerLike;
  /** Hears of every retry; noTelemetry by default. */
  readonly telemetry?: Telemetry;
  /** Which installed models hold which stored content, to fill downloads from; a bounded one by default. */
  readonly contentRegistry?: ContentRegistry;
}

/** A loader: `run` applies ops; the rest lets health checks, status endpoints and tests look at it. */
export interface Loader {
  /**
   * Applies ops, emitting every status change; completes when `op$` has completed and all work is done. One
   * subscription at a time (a second, concurrent one errors); a new one after an unsubscribe takes up every model
   * whose desired state is not reached, except Failed ones.
   */
  readonly run: (op$: Observable<ModelOp>) => Observable<AgentEvent>;
  /** True while nothing is queued, in progress or waiting to be retried (so also while no run is subscribed). */
  readonly idle$: Observable<boolean>;
  readonly statuses: () => ReadonlyMap<ModelName, ModelStatus>;
  /** One model's status now (a running download's progress replaces it without an event), undefined if unknown. */
  readonly status: (name: ModelName) => ModelStatus | undefined;
  /** Every model's desired state and phase, and whether it is settled (what drift repair works from). */
  readonly desiredStates: () => ReadonlyArray<DesiredState>;
  /**
   * The server's index lists (`loaded`) or lacks `name`: a settled model's in-place facts follow it, so the same
   * desired state submitted again brings it back (a model unknown here but loaded is recorded, so a Remove unloads
   * it). Only while a run is subscribed; a model being worked on is left alone.
   */
  readonly noteServerIndex: (name: ModelName, loaded: boolean) => void;
  /**
   * The server lost `name`, which is Loaded and settled, and drift repair reloads it only after `wait`: its status
   * says so (`Retrying`, kind `not-found`, the reason saying when) rather than Loaded; `undefined`: the server
   * lists it again (Loaded). Only while a run is subscribed.
   */
  readonly noteLost: (name: ModelName, wait: LostWait | undefined) => void;
  /**
   * The server no longer lists `name`, whose unload Failed: with nothing of ours on disk for it and nothing wanted,
   * nothing is left to undo, so its record goes (`Removed`). Only while a run is subscribed and it is settled.
   */
  readonly forgetUnlisted: (name: ModelName) => void;
  /**
   * Graceful shutdown: takes up no more work, drops queued work and pending retries, aborts downloads (their
   * staging dirs are removed) and resolves once the load and unload calls in flight have ended. Unsubscribe
   * after it (or after a timeout, which aborts the calls too). Resolves at once when no run is subscribed.
   */
  readonly drain: () => Promise<void>;
  /** Download and load slots, for tests and metrics. */
  readonly slots: { readonly download: Slots; readonly load: Slots };
}

/** A loader over `deps`, starting from what is `inPlace`. */
export const createLoader = (deps: LoaderDeps, inPlace: InPlace): Loader => {
  const { log, random = Math.random, scheduler = asyncScheduler } = deps;
  // An integrator's (createLoader is public): a throw from it is logged, never a model's failure.
  const telemetry = guardedTelemetry(deps.telemetry ?? noTelemetry, log);
  const slots = { download: createSlots(deps.downloadConcurrency), load: createSlots(deps.loadConcurrency) };
  // Like the records, what the model dir holds outlives a run: a new one fills from what an earlier one installed.
  const content = createContentSharing({
    store: deps.store,
    log,
    registry: deps.contentRegistry,
    telemetry,
  });
  const records = new Map<ModelName, ModelRecord>();
  for (const [name, spec] of inPlaceSnapshot(inPlace))
    records.set(name, newRecord(name, spec, inPlace.onDisk.get(name), inPlace.loaded.has(name)));
  const idle$ = new BehaviorSubject(true);
  let current: Run | undefined;
  const isSettled = (name: ModelName): boolean => current?.isSettled(name) ?? false;

  const context: RunContext = {
    records,
    effects: { ...deps, slots, content },
    workers: deps.downloadConcurrency + deps.loadConcurrency,
    scheduler,
    retry: deps.retry,
    random,
    telemetry,
    idle$,
  };

  const run = (op$: Observable<ModelOp>): Observable<AgentEvent> =>
    new Observable<AgentEvent>((subscriber) => {
      if (current !== undefined)
        return subscriber.error(new Error('loader.run is already subscribed; one run at a time'));
      const thisRun = createRun(context, subscriber);
      current = thisRun;
      thisRun.start(op$);
      return () => {
        thisRun.end();
        current = undefined;
        idle$.next(true); // nothing happens until the next subscription
      };
    });

  return {
    run,
    idle$: idle$.pipe(distinctUntilChanged()),
    statuses: () => new Map([...records].map(([name, record]) => [name, record.status])),
    status: (name) => records.get(name)?.status,
    desiredStates: () =>
      [...records.values()].map((record) => ({
        name: record.name,
        desired: record.desired,
        phase: record.status.phase,
        settled: isSettled(record.name),
        ...(record.rejected && record.status.phase === 'Failed' ? { rejected: true } : {}),
        ...(record.lost === true ? { lost: true } : {}),
        ...(record.desired === undefined && record.onDisk !== undefined ? { leftOnDisk: true } : {}),
      })),
    drain: () => current?.drain() ?? Promise.resolve(),
    noteServerIndex: (name, loaded) => {
      const record = records.get(name);
      if (current === undefined) return;
      if (record === undefined) {
        if (loaded) records.set(name, newRecord(name, undefined, undefined, true));
      } else if (isSettled(name)) {
        record.loaded = loaded;
        if (!loaded) record.loadedSpec = undefined;
      }
    },
    noteLost: (name, wait) => {
      const record = records.get(name);
      if (current !== undefined && record !== undefined && isSettled(name)) current.showLost(record, wait);
    },
    forgetUnlisted: (name) => {
      const record = records.get(name);
      if (current === undefined || record === undefined || !isSettled(name)) return;
      if (record.status.phase !== 'Failed' || record.desired !== undefined || record.onDisk !== undefined)
        return;
      record.loaded = false;
      current.forget(record);
    },
    slots,
  };
};
