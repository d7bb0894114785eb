/** repairDrift: at each resync, compares the server's index with the loader's records and re-submits what drifted. */
import type { Logger } from 'pino';
import {
  asyncScheduler,
  catchError,
  defer,
  exhaustMap,
  map,
  mergeMap,
  of,
  take,
  type Observable,
  type OperatorFunction,
  type SchedulerLike,
} from 'rxjs';
import {
  findRepairs,
  type DesiredState,
  type FailedRetries,
  type LostReloads,
  type LostWait,
  type RepairKind,
} from '../core/drift';
import { toEffectError } from '../core/errors';
import type { ModelName } from '../core/model-name';
import type { ModelOp } from '../core/model-op';
import type { Telemetry } from '../ports';

/** What started a resync (the Telemetry port's `resyncRun` triggers). */
export type ResyncTrigger = Parameters<Telemetry['resyncRun']>[0];

/** The part of the loader drift repair needs (src/loader/loader.ts implements it). */
export interface DriftRecords {
  readonly desiredStates: () => ReadonlyArray<DesiredState>;
  readonly noteServerIndex: (name: ModelName, loaded: boolean) => void;
  /** The server lost `name` and its reload waits (`wait`), or (undefined) it lists it again. */
  readonly noteLost: (name: ModelName, wait: LostWait | undefined) => void;
  /** A failed unload of `name` is done: the server no longer lists it and nothing of ours is on disk. */
  readonly forgetUnlisted: (name: ModelName) => void;
}

/** What `repairDrift` asks and tells. */
export interface RepairDriftOptions {
  readonly records: DriftRecords;
  /** The models the server reports loaded: one call per resync, aborted when unsubscribed. */
  readonly serverIndex: () => Observable<ReadonlySet<string>>;
  /** The resync interval: the first wait between two retries of a Failed model (`failedRetryPolicy`, core/drift.ts). */
  readonly intervalMs: number;
  readonly log: Logger;
  readonly telemetry: Pick<Telemetry, 'resyncRun' | 'repair' | 'repairsDeferred'>;
  /** Unloads of unlisted models in progress at most after a resync (`--max-unlisted-unloads`). */
  readonly maxUnlistedUnloads?: number;
}

const repairMessages: Readonly<Record<RepairKind, string>> = {
  'reload-lost': 'drift: the model server lost the model; loading it again',
  'unload-unlisted': 'drift: the model server has a model the config does not list; unloading it',
  'retry-failed': 'drift: retrying a failed model',
  'retry-unload': 'drift: retrying a failed unload',
};

/** One warn line for each model lost again after its reload: reloaded, but after a longer wait each time. */
const warnLostAgain = (
  repairs: ReadonlyArray<{ readonly kind: RepairKind; readonly name: ModelName }>,
  lost: LostReloads,
  now: number,
  log: Logger,
): void => {
  for (const { kind, name } of repairs) {
    const reload = lost.get(name);
    if (kind !== 'reload-lost' || reload === undefined || reload.retries < 2) continue;
    log.warn(
      { model: name, reloads: reload.retries, nextReloadInMs: reload.dueAt - now },
      'drift: the model server keeps losing the model after loading it (is it registered under another name?); loading it again, each time after a longer wait',
    );
  }
};

/**
 * Each trigger asks the server's index once (a trigger while it is asked is dropped) and emits the ops that
 * re-submit the desired state of every model that drifted (see `findRepairs`): the loader does the work, with
 * its own retries, so this is no second pipeline. Each repair is logged (with `model`) and counted; unloads of
 * unlisted models beyond the cap are deferred (one warn line with their count, and a metric). A server
 * that does not answer is logged and skipped until the next trigger.
 */
export const repairDrift =
  (
    options: RepairDriftOptions,
    scheduler: SchedulerLike = asyncScheduler,
  ): OperatorFunction<ResyncTrigger, ModelOp> =>
  (trigger$) =>
    defer(() => {
      const { records, log, telemetry } = options;
      let retries: FailedRetries = new Map();
      let lost: LostReloads = new Map();
      return trigger$.pipe(
        exhaustMap((trigger) => {
          telemetry.resyncRun(trigger);
          const before = records.desiredStates();
          return options.serverIndex().pipe(
            take(1),
            map((serverLoaded) => {
              const found = findRepairs({
                before,
                after: records.desiredStates(),
                serverLoaded,
                retries,
                lost,
                now: scheduler.now(),
                intervalMs: options.intervalMs,
                maxUnlistedUnloads: options.maxUnlistedUnloads,
              });
              retries = found.retries;
              lost = found.lost;
              const now = scheduler.now();
              warnLostAgain(found.repairs, lost, now, log);
              // While a reload waits out its backoff, /status says the model is lost, not Loaded.
              for (const { name, reload } of found.waiting)
                records.noteLost(name, { reloads: reload.retries, nextReloadInMs: reload.dueAt - now });
              for (const name of found.relisted) records.noteLost(name, undefined);
              for (const name of found.forgotten) records.forgetUnlisted(name);
              if (found.deferred > 0) {
                log.warn(
                  { deferred: found.deferred, trigger },
                  'resync: the model server lists more unconfigured models than one resync unloads; the rest wait for the next resync',
                );
                telemetry.repairsDeferred?.(found.deferred);
              }
              return found.repairs;
            }),
            catchError((error: unknown) => {
              log.warn(
                { err: toEffectError(error), trigger },
                'resync: the model server did not list its models; drift is repaired at the next resync',
              );
              return of([]);
            }),
          );
        }),
        // Each op is emitted right after its facts are noted, in the same turn as the records were read.
        mergeMap((repairs) => repairs),
        map(({ kind, name, op }) => {
          if (kind === 'reload-lost') records.noteServerIndex(name, false);
          if (kind === 'unload-unlisted') records.noteServerIndex(name, true);
          log.info({ model: name, repair: kind }, repairMessages[kind]);
          telemetry.repair(kind);
          return op;
        }),
      );
    });
