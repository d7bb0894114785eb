/**
 * The loader: makes the model dir and the model server match the latest desired state of every model. It owns
 * one record per model; ops only record what is wanted, a keyed work queue (work-queue.ts) hands model names to a
 * fixed number of workers, and the per-model steps live in reconcile.ts.
 */
import { asyncScheduler, BehaviorSubject, distinctUntilChanged, Observable } from 'rxjs';
import { retryDelay } from '../core/retry-policy';
import { toEffectError, type EffectError } from '../core/errors';
import { inPlaceSnapshot, type InPlace } from '../core/in-place';
import type { ModelSpec } from '../core/model-config';
import type { ModelName } from '../core/model-name';
import type { DesiredState } from '../core/drift';
import type { ModelOp } from '../core/model-op';
import {
  nextStatus,
  statusEvent,
  type AgentEvent,
  type ModelPhase,
  type ModelStatus,
} from '../core/model-status';
import { redact } from '../core/redact';
import { noTelemetry } from '../ports';
import type { LoaderDeps } from './loader-deps';
import { failedStep, needsWork, newRecord, want, type ModelRecord } from './model-record';
import { isInPlace, reconcile, type ReconcileEffects } from './reconcile';
import { createSlots, type Slots } from '../core/slots';
import { createContentSharing } from './content-sharing';
import { logStatus } from './status-log';
import { createOpIntake } from './op-intake';
import { createWorkQueue, type WorkQueue } from './work-queue';

/** Ops taken in one turn of the event loop; a bigger burst is taken over the next turns (op-intake.ts). */
const opsPerTurn = 256;

/**
 * Workers (and unload calls) of the side lane: unloads of models with nothing of ours on disk, i.e. names the
 * server listed that no config asked for. However many there are and however long their unloads hang, they never
 * hold a worker or a load slot that a configured model's load needs.
 */
export const unlistedUnloadWorkers = 2;

/** An unload of a model modelsync never installed: the side lane's work. */
const isUnlistedUnload = (record: ModelRecord): boolean =>
  record.desired === undefined && record.onDisk === undefined;

export type { LoaderDeps } from './loader-deps';

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
  /** The status of every model the loader knows. */
  readonly statuses: () => ReadonlyMap<ModelName, ModelStatus>;
  /** Every model's desired state and phase, and whether it is settled (what drift repair works from). */
  readonly desiredStates: () => ReadonlyArray<DesiredState>;
  /**
   * The server's index lists (`loaded`) or lacks `name`: a settled model's in-place facts follow it, so the same
   * desired state submitted again brings it back (a model unknown here but loaded is recorded, so a Remove unloads
   * it). Only while a run is subscribed; a model being worked on is left alone.
   */
  readonly noteServerIndex: (name: ModelName, loaded: boolean) => void;
  /**
   * Graceful shutdown: takes up no more work, drops queued work and pending retries, aborts downloads (their
   * staging dirs are removed) and resolves once the load and unload calls in flight have ended. Unsubscribe
   * after it (or after a timeout, which aborts the calls too). Resolves at once when no run is subscribed.
   */
  readonly drain: () => Promise<void>;
  /** Download and load slots, for tests and metrics. */
  readonly slots: { readonly download: Slots; readonly load: Slots };
}

/** The HTTP status of a failure, for its log line (a failure is one line: kind, status, message). */
const statusOf = (error: EffectError): Readonly<Record<string, number>> =>
  error.status === undefined ? {} : { status: error.status };

/** A loader over `deps`, starting from what is `inPlace`. */
export const createLoader = (deps: LoaderDeps, inPlace: InPlace): Loader => {
  const { log, retry, random = Math.random, scheduler = asyncScheduler, telemetry = noTelemetry } = deps;
  const slots = { download: createSlots(deps.downloadConcurrency), load: createSlots(deps.loadConcurrency) };
  // Like the records, what the model dir holds outlives a run: a new one fills from what an earlier one installed.
  const content = createContentSharing({
    store: deps.store,
    log,
    ...(deps.contentRegistry !== undefined ? { registry: deps.contentRegistry } : {}),
  });
  const workers = deps.downloadConcurrency + deps.loadConcurrency;
  const records = new Map<ModelName, ModelRecord>();
  for (const [name, spec] of inPlaceSnapshot(inPlace))
    records.set(name, newRecord(name, spec, inPlace.onDisk.get(name), inPlace.loaded.has(name)));
  const idle$ = new BehaviorSubject(true);
  let running = false;
  /** The queues (main lane, side lane) of the run subscribed now, if any, and how to drain that run. */
  let active: ReadonlyArray<WorkQueue<ModelName>> | undefined;
  let drainRun: (() => Promise<void>) | undefined;
  const isSettled = (name: ModelName): boolean =>
    active !== undefined && !active.some((lane) => lane.has(name));

  /** The record of the model `op` is about, once it records the op's desired state and needs work for it. */
  const recordToWorkOn = (op: ModelOp): ModelRecord | undefined => {
    const desired = op._tag === 'Add' ? op.spec : undefined;
    const known = records.get(op.modelName);
    if (known === undefined && desired === undefined) return undefined; // a Remove of a model never seen
    const record = known ?? records.set(op.modelName, newRecord(op.modelName)).get(op.modelName)!;
    return want(record, desired, isSettled(op.modelName)) ? record : undefined;
  };

  const run = (op$: Observable<ModelOp>): Observable<AgentEvent> =>
    new Observable<AgentEvent>((subscriber) => {
      if (running) return subscriber.error(new Error('loader.run is already subscribed; one run at a time'));
      running = true;
      const stop = new AbortController();
      const queue = createWorkQueue<ModelName>(scheduler);
      const side = createWorkQueue<ModelName>(scheduler);
      active = [queue, side];
      let sourceDone = false;

      const report = (
        record: ModelRecord,
        phase: ModelPhase,
        spec: ModelSpec | undefined,
        details: Pick<ModelStatus, 'reason' | 'errorKind' | 'attempt'> = {},
        logFields: Readonly<Record<string, number>> = {},
      ): void => {
        if (stop.signal.aborted) return; // aborted work winding down has nothing to tell
        record.status = nextStatus(record.status, phase, spec, details, scheduler.now());
        record.reported = true;
        logStatus(log, record.status, logFields);
        subscriber.next(statusEvent(record.status));
      };
      const effects: ReconcileEffects = {
        ...deps,
        slots,
        content,
        report: (name, phase, spec, logFields) => report(records.get(name)!, phase, spec, {}, logFields),
        progress: (name, { bytes, totalBytes }) => {
          const record = records.get(name); // figures of the running download, without an event per report
          if (record?.status.phase === 'Downloading')
            record.status = { ...record.status, bytesDownloaded: bytes, bytesTotal: totalBytes };
        },
      };

      let drained: (() => void) | undefined;
      drainRun = () =>
        new Promise<void>((resolve) => {
          drained = resolve;
          queue.shutDown();
          side.shutDown();
          for (const record of records.values()) {
            record.generation.abort(new Error('modelsync is shutting down')); // downloads stop; calls sent finish
            record.generation = new AbortController();
          }
          updateIdle();
        });

      const updateIdle = (): void => {
        if (stop.signal.aborted) return;
        const [main, lane] = [queue.counts(), side.counts()];
        const [queued, processing, delayed] = [
          main.queued + lane.queued,
          main.processing + lane.processing,
          main.delayed + lane.delayed,
        ];
        // Draining: the work left undone is not "idle" (no Ready at shutdown); the owner unsubscribes once drained.
        if (drained !== undefined) return processing === 0 ? drained() : undefined;
        const idle = queued + processing + delayed + intake.waiting() === 0;
        idle$.next(idle);
        if (idle && sourceDone) subscriber.complete();
      };

      const enqueue = (record: ModelRecord): void => {
        queue.add(record.name);
        if (queue.isQueued(record.name)) report(record, 'Pending', record.desired); // no worker took it at once
      };

      /** Works once towards the record's desired state; a transient failure comes back through `addAfter`. */
      const work = async (record: ModelRecord, laneEffects: ReconcileEffects): Promise<void> => {
        const { desired, generation } = record;
        if (desired === undefined && isInPlace(record, undefined)) {
          // Nothing was ever installed (added and removed before any work): close what was reported, if anything.
          if (record.reported) report(record, 'Removed', undefined);
          records.delete(record.name);
          return;
        }
        try {
          await reconcile(record, desired, laneEffects, { stop: stop.signal, supersede: generation.signal });
          record.attempts = 0;
          if (record.desired === undefined && isInPlace(record, undefined)) records.delete(record.name);
        } catch (cause) {
          if (stop.signal.aborted || generation.signal.aborted) return; // our own abort, not the model's failure
          const error = toEffectError(cause);
          record.attempts++;
          const details = { reason: redact(error.message), errorKind: error.kind, attempt: record.attempts };
          if (!error.retryable || record.attempts >= retry.maxAttempts) {
            // The server refused these files for good: retrying them (a resync) cannot change its answer.
            record.rejected = !error.retryable && failedStep(record.status.phase) === 'load';
            return report(record, 'Failed', desired, details, statusOf(error));
          }
          telemetry.retry(failedStep(record.status.phase));
          report(record, 'Retrying', desired, details, statusOf(error));
          queue.addAfter(record.name, retryDelay(retry, record.attempts, random));
        }
      };

      const sideEffects: ReconcileEffects = {
        ...effects,
        slots: { download: slots.download, load: createSlots(unlistedUnloadWorkers) },
      };
      const start = (name: ModelName, lane: WorkQueue<ModelName>, laneEffects: ReconcileEffects): void => {
        const record = records.get(name); // undefined once an Add then Remove was closed by an earlier pass
        const task = record ? record.inFlight.then(() => work(record, laneEffects)) : Promise.resolve();
        if (record) record.inFlight = task;
        void task.then(() => {
          lane.done(name);
          pump(); // a worker is free
        });
      };

      function pump(): void {
        let name: ModelName | undefined;
        while (queue.counts().processing < workers && (name = queue.get()) !== undefined) {
          const record = records.get(name);
          if (record !== undefined && isUnlistedUnload(record)) {
            side.add(name); // every change comes in through the main lane; this one goes to the side lane
            queue.done(name);
          } else start(name, queue, effects);
        }
        while (side.counts().processing < unlistedUnloadWorkers && (name = side.get()) !== undefined) {
          const record = records.get(name);
          // Wanted again since (an Add came in through the main lane): nothing for the side lane to do.
          if (record !== undefined && !isUnlistedUnload(record)) side.done(name);
          else start(name, side, sideEffects);
        }
        updateIdle();
      }
      const take = (op: ModelOp): void => {
        const record = recordToWorkOn(op);
        if (record === undefined) return;
        queue.cancelAddAfter(record.name); // a new desired state supersedes a pending retry
        enqueue(record);
      };
      const intake = createOpIntake(take, { perTurn: opsPerTurn, budgetMs: 10, scheduler }, () =>
        updateIdle(),
      );
      subscriber.add(intake.subscription);
      subscriber.add(queue.available$.subscribe(pump));
      subscriber.add(side.available$.subscribe(pump));
      for (const record of records.values()) if (needsWork(record)) enqueue(record);
      subscriber.add(
        op$.subscribe({
          next: intake.offer,
          error: (error: unknown) => subscriber.error(error),
          complete: () => {
            sourceDone = true;
            updateIdle();
          },
        }),
      );
      updateIdle();

      return () => {
        stop.abort(new Error('modelsync is shutting down'));
        queue.shutDown();
        side.shutDown();
        active = undefined;
        drainRun = undefined;
        idle$.next(true); // nothing happens until the next subscription
        running = false;
      };
    });

  return {
    run,
    idle$: idle$.pipe(distinctUntilChanged()),
    statuses: () => new Map([...records].map(([name, record]) => [name, record.status])),
    desiredStates: () =>
      [...records.values()].map((record) => ({
        name: record.name,
        desired: record.desired,
        phase: record.status.phase,
        settled: isSettled(record.name),
        ...(record.rejected && record.status.phase === 'Failed' ? { rejected: true } : {}),
      })),
    drain: () => drainRun?.() ?? Promise.resolve(),
    noteServerIndex: (name, loaded) => {
      const record = records.get(name);
      if (active === undefined) return;
      if (record === undefined) {
        if (loaded) records.set(name, newRecord(name, undefined, undefined, true));
      } else if (isSettled(name)) {
        record.loaded = loaded;
        if (!loaded) record.loadedSpec = undefined;
      }
    },
    slots,
  };
};
