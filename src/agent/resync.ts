/**
 * Resync and drift repair, composed: one trigger stream (a timer and SIGHUP) both re-reads the config and runs the
 * repair step, whose ops join the config's ops on their way to the loader.
 */
import type { Logger } from 'pino';
import { mergeWith, share, type MonoTypeOperatorFunction, type Observable, type SchedulerLike } from 'rxjs';
import type { ModelOp } from '../core/model-op';
import { abortable } from './abortable';
import {
  repairDrift,
  type DriftRecords,
  type ResyncTrigger,
  resyncTriggers,
  type ResyncTriggerOptions,
} from '../pipeline';
import type { ModelServer, Telemetry } from '../ports';

/** A resync reads the server's index and the loader's records, and reports to the log and the telemetry. */
export interface ResyncDeps {
  readonly server: ModelServer;
  readonly records: DriftRecords;
  readonly log: Logger;
  readonly telemetry: Telemetry;
  readonly scheduler: SchedulerLike;
}

/**
 * When a resync runs, and how much unlisted work it may leave in progress (`--max-unlisted-unloads`; for
 * `startAgent`, `AgentSettings.maxUnlistedUnloads` bounds the start too, and wins).
 */
export type ResyncOptions = ResyncTriggerOptions & { readonly maxUnlistedUnloads?: number };

/** A resync's two halves: the triggers that re-read the config, and the operator that adds the repairs' ops. */
export interface Resync {
  /** Each resync, for the config pipeline to re-read models.json (a change no event reported is found). */
  readonly rereads$: Observable<ResyncTrigger>;
  /** Merges the ops of each resync's repairs into the config's ops. */
  readonly withRepairs: MonoTypeOperatorFunction<ModelOp>;
}

/**
 * The resync of `options` (every `intervalMs`, and on each `signal$`) over `deps`. The triggers are shared: one
 * timer paces both halves, and it runs while either is subscribed.
 */
export const resyncOf = (options: ResyncOptions, deps: ResyncDeps): Resync => {
  const triggers$ = resyncTriggers(options, deps.scheduler).pipe(share());
  const serverIndex = () => abortable((signal) => deps.server.loadedModels(signal));
  const repairs$ = triggers$.pipe(repairDrift({ ...deps, ...options, serverIndex }, deps.scheduler));
  return { rereads$: triggers$, withRepairs: mergeWith(repairs$) };
};
