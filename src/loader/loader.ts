/**
 * The loader: makes the model dir and the server match each model's latest desired state (see docs/architecture.md).
 * It owns the records, the statuses and `idle$`; one run (a subscription of `run`) at a time takes ops, hands model
 * names to its two lanes, says when all is idle, drains and ends.
 */
import type { Logger } from 'pino';
import {
  asyncScheduler,
  BehaviorSubject,
  distinctUntilChanged,
  Observable,
  type SchedulerLike,
  type Subscriber,
} from 'rxjs';
import { inPlaceSnapshot, type InPlace } from '../core/in-place';
import type { ModelName } from '../core/model-name';
import type { DesiredState } from '../core/drift';
import type { ModelOp } from '../core/model-op';
import type { AgentEvent, ModelStatus } from '../core/model-status';
import { noTelemetry } from '../ports';
import type { DownloadFunction, LoadJournal, ModelServer, ModelStore, Telemetry } from '../ports';
import type { RetryPolicy } from '../core/retry-policy';
import { attemptOnce, type AttemptContext } from './attempt';
import { createLane, laneCounts } from './lane';
import { abortGeneration, needsWork, newRecord, recordToWorkOn, type ModelRecord } from './model-record';
import { createOpIntake } from './op-intake';
import type { ReconcileEffects } from './reconcile';
import { statusReporter } from './status-log';
import { createSlots, type Slots } from '../core/slots';
import { createContentSharing } from './content-sharing';
import type { ContentRegistry } from './content-registry';

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

export interface LoaderDeps {
  readonly store: ModelStore;
  readonly journal: LoadJournal;
  readonly server: ModelServer;
  /** Fills a directory with the model stored at a URI (storage providers, keyed by scheme). */
  readonly download: DownloadFunction;
  readonly log: Logger;
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

/** One run: `isSettled` while neither lane holds the model; `drain` (see `Loader.drain`); `end`, the teardown. */
interface Run {
  readonly isSettled: (name: ModelName) => boolean;
  readonly drain: () => Promise<void>;
  readonly end: () => void;
}

/** A loader over `deps`, starting from what is `inPlace`. */
export const createLoader = (deps: LoaderDeps, inPlace: InPlace): Loader => {
  const { log, random = Math.random, scheduler = asyncScheduler, telemetry = noTelemetry } = deps;
  const slots = { download: createSlots(deps.downloadConcurrency), load: createSlots(deps.loadConcurrency) };
  // Like the records, what the model dir holds outlives a run: a new one fills from what an earlier one installed.
  const content = createContentSharing({ store: deps.store, log, registry: deps.contentRegistry });
  const records = new Map<ModelName, ModelRecord>();
  for (const [name, spec] of inPlaceSnapshot(inPlace))
    records.set(name, newRecord(name, spec, inPlace.onDisk.get(name), inPlace.loaded.has(name)));
  const idle$ = new BehaviorSubject(true);
  const effects = { ...deps, slots, content };
  let current: Run | undefined;

  /** A run that emits every status change to `subscriber` and completes it once its ops are done and all is idle. */
  const startRun = (subscriber: Subscriber<AgentEvent>, op$: Observable<ModelOp>): Run => {
    const stop = new AbortController();
    let sourceDone = false;
    let drained: (() => void) | undefined;
    const report = statusReporter(log, scheduler, stop.signal, subscriber);
    // The steps' effects, reporting each phase through `report` and each download's figures on its status.
    const reporting: ReconcileEffects = {
      ...effects,
      report: (name, phase, spec, logFields) => report(records.get(name)!, phase, spec, {}, logFields),
      progress: (name, { bytes, totalBytes }) => {
        const record = records.get(name); // figures of the running download, without an event per report
        if (record?.status.phase === 'Downloading')
          record.status = { ...record.status, bytesDownloaded: bytes, bytesTotal: totalBytes };
      },
    };
    const sideEffects = { ...reporting, slots: { ...slots, load: createSlots(unlistedUnloadWorkers) } };
    const attempts: AttemptContext = {
      records,
      retry: deps.retry,
      random,
      telemetry,
      report,
      stop: stop.signal,
      retryAfter: (name, delayMs) => main.queue.addAfter(name, delayMs),
    };
    const pump = (): void => {
      main.pump();
      side.pump();
      updateIdle();
    };
    // Every change comes in through the main lane, which hands unlisted unloads to the side lane.
    const side = createLane(scheduler, {
      records,
      workers: unlistedUnloadWorkers,
      takes: isUnlistedUnload, // one wanted again since is the main lane's already
      work: (record) => attemptOnce(record, sideEffects, attempts),
      freed: pump,
    });
    const main = createLane(scheduler, {
      records,
      workers: deps.downloadConcurrency + deps.loadConcurrency,
      takes: (record) => !isUnlistedUnload(record),
      handOver: (name) => side.queue.add(name),
      work: (record) => attemptOnce(record, reporting, attempts),
      freed: pump,
    });
    const lanes = [main, side];
    /** True while neither lane holds `name`: not queued, not worked on, no retry waiting. */
    const isSettled = (name: ModelName): boolean => !lanes.some((lane) => lane.queue.has(name));

    const updateIdle = (): void => {
      if (stop.signal.aborted) return;
      const { queued, processing, delayed } = laneCounts(lanes);
      // Draining: the work left undone is not "idle" (no Ready at shutdown); the owner unsubscribes once drained.
      if (drained !== undefined) return processing === 0 ? drained() : undefined;
      const idle = queued + processing + delayed + intake.waiting() === 0;
      idle$.next(idle);
      if (idle && sourceDone) subscriber.complete();
    };
    const enqueue = (record: ModelRecord): void => {
      main.queue.add(record.name);
      if (main.queue.isQueued(record.name)) report(record, 'Pending', record.desired); // no worker took it at once
    };
    const take = (op: ModelOp): void => {
      const record = recordToWorkOn(records, op, isSettled);
      if (record === undefined) return;
      main.queue.cancelAddAfter(record.name); // a new desired state supersedes a pending retry
      enqueue(record);
    };
    const intake = createOpIntake(take, { perTurn: opsPerTurn, budgetMs: 10, scheduler }, updateIdle);

    const thisRun: Run = {
      isSettled,
      drain: () =>
        new Promise<void>((resolve) => {
          drained = resolve;
          for (const lane of lanes) lane.queue.shutDown();
          // Downloads stop; calls sent finish.
          for (const record of records.values()) abortGeneration(record, 'modelsync is shutting down');
          updateIdle();
        }),
      end: () => {
        stop.abort(new Error('modelsync is shutting down'));
        for (const lane of lanes) lane.queue.shutDown();
      },
    };
    current = thisRun; // known to the loader before the first op comes in
    subscriber.add(intake.subscription);
    for (const lane of lanes) subscriber.add(lane.queue.available$.subscribe(pump));
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
    return thisRun;
  };
  const isSettled = (name: ModelName): boolean => current?.isSettled(name) ?? false;

  const run = (op$: Observable<ModelOp>): Observable<AgentEvent> =>
    new Observable<AgentEvent>((subscriber) => {
      if (current !== undefined)
        return subscriber.error(new Error('loader.run is already subscribed; one run at a time'));
      const thisRun = startRun(subscriber, op$);
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
    desiredStates: () =>
      [...records.values()].map((record) => ({
        name: record.name,
        desired: record.desired,
        phase: record.status.phase,
        settled: isSettled(record.name),
        ...(record.rejected && record.status.phase === 'Failed' ? { rejected: true } : {}),
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
    slots,
  };
};
