/**
 * The loader: makes the model dir and the model server match the latest wanted state of every model.
 *
 * It is a keyed work queue in the manner of client-go's: ops only record what is wanted per model (so ops still
 * queued collapse to the latest desired state), a name is queued at most once and is never worked on twice at a
 * time (so each model's steps run strictly in order), a fixed number of workers take names from the queue (so a
 * burst of any size holds no more than that many models in progress), and transient failures come back after a
 * backoff without holding a worker. Downloads and load calls are further bounded by their own slots.
 */
import type { Logger } from 'pino';
import { BehaviorSubject, distinctUntilChanged, Observable } from 'rxjs';
import { backoffDelay } from '../core/backoff';
import { toEffectError } from '../core/errors';
import type { ModelSpec } from '../core/model-config';
import type { ModelName } from '../core/model-name';
import type { ModelOp } from '../core/model-op';
import { statusEvent, type AgentEvent, type ModelPhase, type ModelStatus } from '../core/model-status';
import { specEquals, unknownSpec } from '../core/snapshot';
import { inPlaceSnapshot, type InPlace } from '../core/in-place';
import type { Installed, LoadJournal, ModelServer, ModelStore } from '../ports';
import { createSlots, type Slots } from './slots';

export interface RetryPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
  /** Attempts of one step before the model is marked Failed (1 = no retry). */
  readonly maxAttempts: number;
}

export interface LoaderDeps {
  readonly store: ModelStore;
  readonly journal: LoadJournal;
  readonly server: ModelServer;
  /** Fills a directory with the model stored at a URI (storage providers, keyed by scheme). */
  readonly download: (uri: string, targetDir: string, signal: AbortSignal) => Promise<void>;
  readonly log: Logger;
  readonly downloadConcurrency: number;
  readonly loadConcurrency: number;
  readonly retry: RetryPolicy;
  readonly random?: () => number;
}

export interface Loader {
  /** Applies ops, emitting every status change; completes when `op$` has completed and all work is done. */
  readonly run: (op$: Observable<ModelOp>) => Observable<AgentEvent>;
  /** True while nothing is queued, in progress or waiting to be retried. */
  readonly idle$: Observable<boolean>;
  /** The status of every model the loader knows. */
  readonly statuses: () => ReadonlyMap<ModelName, ModelStatus>;
  /** Download and load slots, for tests and metrics. */
  readonly slots: { readonly download: Slots; readonly load: Slots };
}

interface ModelRecord {
  readonly name: ModelName;
  /** The spec wanted, or undefined when the model should be gone. */
  desired: ModelSpec | undefined;
  onDisk: ModelSpec | undefined;
  loaded: boolean;
  /** The spec of the version the server loaded, when known. */
  loadedSpec: ModelSpec | undefined;
  status: ModelStatus;
  /** Consecutive failed attempts towards the current desired state. */
  attempts: number;
  /** Bumped whenever `desired` changes: work begun for an older generation is superseded, even if the spec came back. */
  generation: number;
  queued: boolean;
  working: boolean;
  /** Wanted state changed while working: work on it again afterwards. */
  dirty: boolean;
  retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Aborts the step in progress when it is a download (a newer spec makes it pointless). */
  abortDownload: (() => void) | undefined;
}

type Outcome =
  | { readonly _tag: 'Done' | 'Failed' | 'Superseded' | 'Stopped' }
  | { readonly _tag: 'Retry'; readonly delayMs: number };

const sameDesired = (a: ModelSpec | undefined, b: ModelSpec | undefined): boolean =>
  a === undefined || b === undefined ? a === b : specEquals(a, b);

const phaseMessages: Readonly<Record<ModelPhase, string>> = {
  Pending: 'model pending',
  Downloading: 'model downloading',
  Loading: 'model loading',
  Loaded: 'model loaded',
  Unloading: 'model unloading',
  Removed: 'model removed',
  Retrying: 'model step failed; retrying',
  Failed: 'model failed',
};

export const createLoader = (deps: LoaderDeps, inPlace: InPlace): Loader => {
  const { store, journal, server, log, retry } = deps;
  const random = deps.random ?? Math.random;
  const slots = { download: createSlots(deps.downloadConcurrency), load: createSlots(deps.loadConcurrency) };
  const workers = deps.downloadConcurrency + deps.loadConcurrency;
  const records = new Map<ModelName, ModelRecord>();
  const idle$ = new BehaviorSubject(true);

  /**
   * `desired` starts as the in-place snapshot says (core/in-place.ts, the one rule for what counts as in place):
   * the in-place spec, or `unknownSpec` for half-in-place models, so whichever op the first diff sends for them
   * is a change; undefined for models never seen.
   */
  const newRecord = (
    name: ModelName,
    desired?: ModelSpec,
    found: { onDisk?: ModelSpec; loaded: boolean } = { loaded: false },
  ): ModelRecord => {
    const inPlaceSpec = desired !== undefined && desired !== unknownSpec ? desired : undefined;
    const record: ModelRecord = {
      name,
      desired,
      onDisk: found.onDisk,
      loaded: found.loaded,
      loadedSpec: inPlaceSpec,
      status: {
        modelName: name,
        phase: inPlaceSpec !== undefined ? 'Loaded' : 'Pending',
        ...(inPlaceSpec ? { spec: inPlaceSpec } : {}),
      },
      attempts: 0,
      generation: 0,
      queued: false,
      working: false,
      dirty: false,
      retryTimer: undefined,
      abortDownload: undefined,
    };
    records.set(name, record);
    return record;
  };
  for (const [name, spec] of inPlaceSnapshot(inPlace)) {
    newRecord(name, spec, { onDisk: inPlace.onDisk.get(name), loaded: inPlace.loaded.has(name) });
  }

  const run = (op$: Observable<ModelOp>): Observable<AgentEvent> =>
    new Observable<AgentEvent>((subscriber) => {
      const shutdown = new AbortController();
      const queue: ModelName[] = [];
      let head = 0;
      let working = 0;
      let retriesPending = 0;
      let sourceDone = false;

      /** Records and reports a status; `spec` is the one being worked on, which a newer `desired` may have passed. */
      const setStatus = (
        record: ModelRecord,
        phase: ModelPhase,
        spec: ModelSpec | undefined,
        extra: Partial<ModelStatus> = {},
      ): void => {
        record.status = { modelName: record.name, phase, ...(spec ? { spec } : {}), ...extra };
        const fields = {
          model: record.name,
          phase,
          ...extra,
          ...(spec ? { storageUri: spec.storageUri } : {}),
        };
        if (phase === 'Failed') log.error(fields, phaseMessages[phase]);
        else if (phase === 'Retrying') log.warn(fields, phaseMessages[phase]);
        else log.info(fields, phaseMessages[phase]);
        subscriber.next(statusEvent(record.status));
      };

      const updateIdle = (): void => {
        const idle = working === 0 && head === queue.length && retriesPending === 0;
        if (idle$.value !== idle) idle$.next(idle);
        if (idle && sourceDone) subscriber.complete();
      };

      const enqueue = (record: ModelRecord): void => {
        if (record.working) {
          record.dirty = true;
          return;
        }
        if (record.queued) return;
        record.queued = true;
        queue.push(record.name);
        pump();
      };

      const want = (op: ModelOp): void => {
        const record = records.get(op.modelName) ?? newRecord(op.modelName);
        const desired = op._tag === 'Add' ? op.spec : undefined;
        if (!sameDesired(record.desired, desired)) {
          record.desired = desired;
          record.generation++;
          record.attempts = 0;
          record.abortDownload?.();
          if (record.retryTimer !== undefined) {
            clearTimeout(record.retryTimer);
            record.retryTimer = undefined;
            retriesPending--;
          }
          enqueue(record);
        } else if (record.status.phase === 'Failed') {
          record.attempts = 0; // the same spec again (a resync): try once more
          enqueue(record);
        }
      };

      const bringIn = async (record: ModelRecord, target: ModelSpec, signal: AbortSignal): Promise<void> => {
        let replaced: Installed | undefined;
        try {
          if (record.onDisk === undefined || !specEquals(record.onDisk, target)) {
            setStatus(record, 'Downloading', target);
            const download = new AbortController();
            record.abortDownload = () => download.abort(new Error('superseded by a newer spec'));
            const downloadSignal = AbortSignal.any([signal, download.signal]);
            replaced = await slots.download.use(downloadSignal, () =>
              store.install(
                record.name,
                target,
                (dir, s) => deps.download(target.storageUri, dir, s),
                downloadSignal,
              ),
            );
            record.abortDownload = undefined;
            record.onDisk = target;
          }
          if (!(record.loaded && record.loadedSpec !== undefined && specEquals(record.loadedSpec, target))) {
            setStatus(record, 'Loading', target);
            await slots.load.use(signal, async () => {
              await journal.starting(record.name);
              await server.load(record.name, record.loaded, signal);
              await journal.confirmed(record.name);
            });
            record.loaded = true;
            record.loadedSpec = target;
          }
          setStatus(record, 'Loaded', target);
        } finally {
          record.abortDownload = undefined;
          // The version a new one replaced is not needed once the server was asked to load the new one.
          await replaced
            ?.dropReplaced()
            .catch((error: unknown) =>
              log.warn({ err: error, model: record.name }, 'could not delete a replaced model version'),
            );
        }
      };

      const takeOut = async (record: ModelRecord, signal: AbortSignal): Promise<void> => {
        if (!record.loaded && record.onDisk === undefined) {
          // Never installed (added and removed before any work): nothing happened, so nothing to report.
          record.status = { modelName: record.name, phase: 'Removed' };
          return;
        }
        setStatus(record, 'Unloading', undefined);
        await slots.load.use(signal, () => server.unload(record.name, signal));
        record.loaded = false;
        record.loadedSpec = undefined;
        if (record.onDisk !== undefined) {
          await store.remove(record.name);
          record.onDisk = undefined;
          await journal.confirmed(record.name); // a removed model has no load to redo
        }
        setStatus(record, 'Removed', undefined);
      };

      const work = async (record: ModelRecord): Promise<Outcome> => {
        const target = record.desired;
        const generation = record.generation;
        try {
          if (target === undefined) await takeOut(record, shutdown.signal);
          else await bringIn(record, target, shutdown.signal);
          record.attempts = 0;
          return { _tag: 'Done' };
        } catch (cause) {
          if (shutdown.signal.aborted) return { _tag: 'Stopped' };
          if (record.generation !== generation) return { _tag: 'Superseded' };
          const error = toEffectError(cause);
          record.attempts++;
          const reason = error.message;
          if (error.retryable && record.attempts < retry.maxAttempts) {
            const delayMs = backoffDelay(record.attempts, retry.baseMs, retry.maxMs, random);
            setStatus(record, 'Retrying', target, { reason, attempt: record.attempts });
            return { _tag: 'Retry', delayMs };
          }
          setStatus(record, 'Failed', target, { reason, attempt: record.attempts });
          return { _tag: 'Failed' };
        }
      };

      const finish = (record: ModelRecord, outcome: Outcome): void => {
        record.working = false;
        working--;
        if (outcome._tag === 'Stopped') {
          updateIdle();
          return;
        }
        if (record.dirty || outcome._tag === 'Superseded') {
          record.dirty = false;
          enqueue(record);
        } else if (outcome._tag === 'Retry') {
          retriesPending++;
          record.retryTimer = setTimeout(() => {
            record.retryTimer = undefined;
            retriesPending--;
            enqueue(record);
          }, outcome.delayMs);
        } else if (record.desired === undefined && record.status.phase === 'Removed') {
          records.delete(record.name);
        }
        pump();
        updateIdle();
      };

      function pump(): void {
        while (working < workers && head < queue.length && !shutdown.signal.aborted) {
          const record = records.get(queue[head++]!)!;
          record.queued = false;
          record.working = true;
          working++;
          void work(record).then((outcome) => finish(record, outcome));
        }
        if (head === queue.length) {
          queue.length = 0; // the queue only grows while there is a backlog; drop consumed names
          head = 0;
        }
        updateIdle();
      }

      const subscription = op$.subscribe({
        next: want,
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          sourceDone = true;
          updateIdle();
        },
      });

      return () => {
        shutdown.abort(new Error('modelsync is shutting down'));
        subscription.unsubscribe();
        for (const record of records.values()) {
          if (record.retryTimer !== undefined) clearTimeout(record.retryTimer);
          record.retryTimer = undefined;
        }
      };
    });

  return {
    run,
    idle$: idle$.pipe(distinctUntilChanged()),
    statuses: () => new Map([...records].map(([name, record]) => [name, record.status])),
    slots,
  };
};
