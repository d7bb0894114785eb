/** One run of the loader: a subscription of `loader.run`, its two lanes, its op intake, when it is idle, how it ends. */
import type { BehaviorSubject, Observable, SchedulerLike, Subscriber } from 'rxjs';
import type { LostWait } from '../core/drift';
import type { ModelName } from '../core/model-name';
import type { ModelOp } from '../core/model-op';
import type { AgentEvent } from '../core/model-status';
import { toEffectError } from '../core/errors';
import { redact } from '../core/redact';
import { createSlots } from '../core/slots';
import { attemptOnce, type AttemptContext } from './attempt';
import { createLane, laneCounts } from './lane';
import { abortGeneration, needsWork, recordToWorkOn, type ModelRecord } from './model-record';
import { createOpIntake } from './op-intake';
import type { ReconcileEffects } from './reconcile';
import { statusReporter, type ReportStatus } from './status-log';

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

/** What a run works with that outlives it (loader.ts): the records, the steps' effects, the idle$ it keeps. */
export interface RunContext extends Pick<AttemptContext, 'records' | 'retry' | 'random' | 'telemetry'> {
  /** The steps' ports and slots; the run adds where they report. */
  readonly effects: Omit<ReconcileEffects, 'report' | 'progress'>;
  /** Workers of the main lane. */
  readonly workers: number;
  readonly scheduler: SchedulerLike;
  readonly idle$: BehaviorSubject<boolean>;
}

/** A run, made before it starts so the loader knows it while the first ops come in. */
export interface Run {
  /** Takes ops from `op$`, and up every model whose desired state is not reached. */
  readonly start: (op$: Observable<ModelOp>) => void;
  /** True while neither lane holds `name`: not queued, not worked on, no retry waiting. */
  readonly isSettled: (name: ModelName) => boolean;
  /** See `Loader.noteLost`: a settled model's status says it is lost while its reload waits, or Loaded again. */
  readonly showLost: (record: ModelRecord, wait: LostWait | undefined) => void;
  /** Drops a settled record that has nothing in place, closing what was reported of it (see `Loader.forgetUnlisted`). */
  readonly forget: (record: ModelRecord) => void;
  /** See `Loader.drain`. */
  readonly drain: () => Promise<void>;
  /** The teardown: aborts all work; nothing is reported after it. */
  readonly end: () => void;
}

/** The steps' effects, reporting each phase through `report` and each download's figures on its status. */
const reportingEffects = ({ effects, records }: RunContext, report: ReportStatus): ReconcileEffects => ({
  ...effects,
  report: (name, phase, spec, logFields, details = {}) =>
    report(records.get(name)!, phase, spec, details, logFields),
  progress: (name, { bytes, totalBytes }) => {
    const record = records.get(name); // figures of the running download, without an event per report
    if (record?.status.phase === 'Downloading')
      record.status = { ...record.status, bytesDownloaded: bytes, bytesTotal: totalBytes };
  },
});

/** A run that emits every status change to `subscriber` and completes it once its ops are done and all is idle. */
export const createRun = (context: RunContext, subscriber: Subscriber<AgentEvent>): Run => {
  const { records, scheduler } = context;
  const stop = new AbortController();
  const draining = new AbortController();
  let sourceDone = false;
  let drained: (() => void) | undefined;
  const report = statusReporter(context.effects.log, scheduler, stop.signal, subscriber);
  const effects = reportingEffects(context, report);
  const sideEffects = { ...effects, slots: { ...effects.slots, load: createSlots(unlistedUnloadWorkers) } };
  const attempts: AttemptContext = {
    ...context,
    report,
    stop: stop.signal,
    drain: draining.signal,
    retryAfter: (name, delayMs) => main.queue.addAfter(name, delayMs),
  };
  // The model's state after a defect is not known: Failed, so /status says so and a resync tries it again.
  const threw = (record: ModelRecord, cause: unknown): void => {
    const error = toEffectError(cause);
    context.effects.log.error(
      { model: record.name, err: error, errorKind: error.kind },
      'work on a model threw: a defect; the model is marked Failed',
    );
    report(record, 'Failed', record.desired, { reason: redact(error.message), errorKind: error.kind });
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
    threw,
    freed: pump,
  });
  const main = createLane(scheduler, {
    records,
    workers: context.workers,
    takes: (record) => !isUnlistedUnload(record),
    handOver: (name) => side.queue.add(name),
    work: (record) => attemptOnce(record, effects, attempts),
    threw,
    freed: pump,
  });
  const lanes = [main, side];
  const isSettled = (name: ModelName): boolean => !lanes.some((lane) => lane.queue.has(name));

  const updateIdle = (): void => {
    if (stop.signal.aborted) return;
    const { queued, processing, delayed } = laneCounts(lanes);
    // Draining: the work left undone is not "idle" (no Ready at shutdown); the owner unsubscribes once drained.
    if (drained !== undefined) return processing === 0 ? drained() : undefined;
    const idle = queued + processing + delayed + intake.waiting() === 0;
    context.idle$.next(idle);
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

  const start = (op$: Observable<ModelOp>): void => {
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
  };
  const drain = (): Promise<void> =>
    new Promise<void>((resolve) => {
      drained = resolve;
      for (const lane of lanes) lane.queue.shutDown();
      // Downloads stop, and calls waiting for a slot; calls sent finish.
      for (const record of records.values()) abortGeneration(record, 'modelsync is shutting down');
      draining.abort(new Error('modelsync is shutting down'));
      updateIdle();
    });
  const showLost = (record: ModelRecord, wait: LostWait | undefined): void => {
    if (wait === undefined) {
      // Not loaded by us: the server lists it again (its status says so, and no ModelLoaded Event is made).
      if (record.lost === true) report(record, 'Loaded', record.desired, { listedAgain: true });
      return;
    }
    // Told once per loss: the next resync finds it still waiting, and its status already says so.
    if (record.status.phase !== 'Loaded' || record.lost === true) return;
    const seconds = Math.ceil(wait.nextReloadInMs / 1000);
    report(record, 'Retrying', record.desired, {
      reason:
        `the model server no longer lists the model (lost again after ${wait.reloads} reloads); it is loaded again ` +
        `at the first resync in ${seconds} s`,
      errorKind: 'not-found',
      attempt: wait.reloads,
    });
    record.lost = true;
  };
  const end = (): void => {
    stop.abort(new Error('modelsync is shutting down'));
    for (const lane of lanes) lane.queue.shutDown();
  };
  const forget = (record: ModelRecord): void => {
    if (record.reported) report(record, 'Removed', undefined);
    records.delete(record.name);
  };
  return { start, isSettled, showLost, forget, drain, end };
};
