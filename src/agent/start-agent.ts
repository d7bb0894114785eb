/**
 * startAgent: modelsync's one start-up sequence — recover the model dir, wait for the model server's answer,
 * create the loader, run the config pipeline — used alike by the CLI, the test harnesses, the bench and
 * integrators. It takes its effects as capabilities, so it imports no edge.
 */
import type { Logger } from 'pino';
import {
  catchError,
  concatMap,
  defer,
  map,
  mergeWith,
  retry,
  share,
  switchMap,
  tap,
  throwError,
  timer,
  type MonoTypeOperatorFunction,
  type Observable,
  type SchedulerLike,
} from 'rxjs';
import { syncModels } from './sync-models';
import { retryDelay, type RetryPolicy } from '../core/retry-policy';
import { toEffectError, type EffectError } from '../core/errors';
import { defaultMaxUnlistedUnloads } from '../core/drift';
import { adoptServerIndex, inPlaceSnapshot, installedInForce, type InPlace } from '../core/in-place';
import type { ModelOp } from '../core/model-op';
import type { AgentEvent } from '../core/model-status';
import type { Snapshot } from '../core/snapshot';
import { abortable } from './abortable';
import { ModelDirUnusable, ServerNotAnswering } from './start-errors';
import { monotonicScheduler } from './monotonic-scheduler';
import { createLoader, guardedTelemetry, type Loader, type LoaderDeps } from '../loader';
import { repairDrift, resyncTriggers, type ResyncTriggerOptions } from '../pipeline';
import {
  noTelemetry,
  type ConfigSource,
  type LoadJournal,
  type ModelServer,
  type ModelStore,
  type Telemetry,
} from '../ports';

/** The effects the agent runs on (`capabilities` in wiring/capabilities.ts builds the real ones from an AppConfig). */
export interface AgentCapabilities {
  readonly configSource: ConfigSource;
  readonly store: ModelStore;
  readonly journal: LoadJournal;
  readonly server: ModelServer;
  /** Fills a directory with the model stored at a URI (`routeStorage` over the storage providers). */
  readonly download: LoaderDeps['download'];
  /** The schemes `download` serves (`routeStorage(...).schemes`): configs naming another are warned about. */
  readonly servedSchemes?: ReadonlyArray<string>;
}

/** What the agent started from, and the loader it runs: the place to serve statuses and readiness from. */
export interface AgentStart {
  readonly inPlace: InPlace;
  readonly loader: Loader;
  /** Models only the server lists that this start left loaded for the resyncs (past `maxUnlistedUnloads`). */
  readonly deferred: number;
}

/** How the agent runs: its logger, caps and timings, and the operators an integrator splices in. */
export interface AgentSettings {
  readonly log: Logger;
  readonly downloadConcurrency: number;
  readonly loadConcurrency: number;
  /** How transient failures are retried; its backoff, without its cap, also paces the start-up wait for the server. */
  readonly retry: RetryPolicy;
  /**
   * How long the start waits for the model server's first answer before it errors with `ServerNotAnswering`;
   * absent: as long as it takes (the server starts beside us, and readiness says we are not ready meanwhile).
   */
  readonly serverWaitMs?: number;
  /** Quiet time after a burst of config events before the confirming re-read. */
  readonly settleMs: number;
  /**
   * Time for the config pacing, the start-up wait, the loader's retries and drift repair (a TestScheduler in tests);
   * default `monotonicScheduler`.
   */
  readonly scheduler?: SchedulerLike;
  /** Jitter source of the backoffs; default Math.random. */
  readonly random?: () => number;
  /** Operators on the accepted snapshots, between `keepValid` and `toModelOps` (e.g. `keepFrameworks`). */
  readonly snapshotOperators?: ReadonlyArray<MonoTypeOperatorFunction<Snapshot>>;
  /** Operators on the ops, between `toModelOps` and the loader (e.g. `mergeWith(resyncOps$)`). */
  readonly opOperators?: ReadonlyArray<MonoTypeOperatorFunction<ModelOp>>;
  /** Called on every subscription once the loader exists, before the first config is read. */
  readonly onStart?: (start: AgentStart) => void;
  /** Hears of config reads, retries, resyncs, repairs and watcher progress (metrics, /status); default none. */
  readonly telemetry?: Telemetry;
  /** Periodic resync and drift repair (every `intervalMs`, and on each `signal$`); absent: none. */
  readonly resync?: ResyncTriggerOptions & { readonly maxUnlistedUnloads?: number };
  /**
   * Unloads of models only the server lists that a start sends at most, and that are in progress at most after a
   * resync (`--max-unlisted-unloads`); the rest wait for the next resync. Default `resync.maxUnlistedUnloads`, else
   * `defaultMaxUnlistedUnloads`.
   */
  readonly maxUnlistedUnloads?: number;
  /**
   * While every read of the config since the start is rejected (or models.json is missing), keep the models the
   * model dir held at the start in force, as the last good config (`keepValid`): loaded, and `Ready` once they are.
   * Default true; `--once` says false: a bad config there is exit 1, nothing changed.
   */
  readonly keepInstalledWhileRejected?: boolean;
}

/** How the start waits: its settings, its clock and jitter, and when it began. */
interface StartWait {
  readonly settings: AgentSettings;
  readonly scheduler: SchedulerLike;
  readonly random: () => number;
  readonly startedAt: number;
}

/**
 * Tries again with the agent's backoff and no cap on attempts, a warn line (`waiting`) each time, while `worthWaiting`
 * says so of the failure; with `serverWaitMs` (`--once`), no later than that after the start (one last try at the
 * deadline), then errors with what `givenUp` makes of the last failure.
 */
const waitingFor = <T>(
  { settings, scheduler, random, startedAt }: StartWait,
  waiting: string | ((error: EffectError) => string),
  givenUp: (waitedMs: number, error: EffectError) => unknown,
  worthWaiting: (error: EffectError) => boolean = () => true,
): MonoTypeOperatorFunction<T> =>
  retry({
    delay: (error: unknown, attempt) => {
      const failure = toEffectError(error);
      if (!worthWaiting(failure)) return throwError(() => error);
      const waitedMs = scheduler.now() - startedAt;
      const leftMs = (settings.serverWaitMs ?? Infinity) - waitedMs;
      if (leftMs <= 0) return throwError(() => givenUp(waitedMs, failure));
      const delayMs = Math.min(leftMs, retryDelay(settings.retry, attempt, random));
      settings.log.warn(
        { err: failure, attempt, delayMs },
        typeof waiting === 'string' ? waiting : waiting(failure),
      );
      return timer(delayMs, scheduler);
    },
  });

/**
 * The wait line of a server's failure: one that answered (an HTTP status, a body that is no model list: a server
 * starting behind a proxy, or a `--server-url` or `--protocol` that names something else) is not said to be silent.
 */
const serverWait = (error: EffectError): string =>
  error.kind === 'http-status' || error.kind === 'invalid-response'
    ? 'model server answers, but not with its model list; waiting for it (if this lasts: a wrong server URL or protocol?)'
    : 'model server not answering yet; waiting for it';

/**
 * The server's loaded models, asked until it answers: the server container starts beside us and may take minutes
 * (big models loaded at its start); giving up would only restart the pod into the same wait, while `/readyz` says
 * we are not ready. With `serverWaitMs`, `ServerNotAnswering` once that is over.
 */
const serverAnswer = (server: ModelServer, wait: StartWait): Observable<ReadonlySet<string>> =>
  abortable((signal) => server.loadedModels(signal)).pipe(
    waitingFor(wait, serverWait, (waitedMs, error) => new ServerNotAnswering(waitedMs, error)),
  );

/**
 * The model dir's markers and the loads the journal never saw confirmed, read again while the model dir does not
 * answer (its mount hangs: `mountWatch`) or fails transiently (EMFILE, EIO: a retryable `filesystem` error), as the
 * server's answer is waited for; any other failure stops the start with `ModelDirUnusable`.
 * Ending the process would not help: its exit waits for the calls that hang, and the pod would not restart.
 */
const recovered = (
  { store, journal }: AgentCapabilities,
  wait: StartWait,
): Observable<Pick<InPlace, 'onDisk' | 'unconfirmed'>> =>
  abortable(async () => ({ onDisk: await store.recover(), unconfirmed: await journal.unconfirmed() })).pipe(
    waitingFor(
      wait,
      'model dir not answering; waiting for it',
      (_, error) => new ModelDirUnusable(error),
      (error) => error.kind === 'timeout' || (error.kind === 'filesystem' && error.retryable),
    ),
    catchError((error: unknown) =>
      throwError(() =>
        error instanceof ModelDirUnusable ? error : new ModelDirUnusable(toEffectError(error)),
      ),
    ),
  );

/**
 * The whole agent, for as long as subscribed: recovers the model dir (first: it creates the dir, which some
 * servers need before they start) and the load journal, asks the server what it has loaded (retrying with
 * backoff until it answers), creates the loader from what is in place, then keeps both equal to the config.
 * Emits every model's status changes and `Ready` once the first accepted config has been applied. Unsubscribing
 * aborts downloads in progress and removes their staging dirs.
 */
export const startAgent = (
  capabilities: AgentCapabilities,
  settings: AgentSettings,
): Observable<AgentEvent> =>
  defer(() => {
    const { log, scheduler = monotonicScheduler, random = Math.random } = settings;
    // An integrator's telemetry that throws is a defect logged, never the end of the agent or a model's work.
    const telemetry = settings.telemetry && guardedTelemetry(settings.telemetry, log);
    const { server } = capabilities;
    const maxUnlistedUnloads =
      settings.maxUnlistedUnloads ?? settings.resync?.maxUnlistedUnloads ?? defaultMaxUnlistedUnloads;
    const started = scheduler.now();
    const wait: StartWait = { settings, scheduler, random, startedAt: started };
    return recovered(capabilities, wait).pipe(
      concatMap((disk) => serverAnswer(server, wait).pipe(map((loaded): InPlace => ({ ...disk, loaded })))),
      switchMap((found) => {
        log.info(
          {
            onDisk: found.onDisk.size,
            loaded: found.loaded.size,
            unconfirmed: found.unconfirmed?.size ?? 0,
          },
          'recovered what is in place',
        );
        const { inPlace, deferred } = adoptServerIndex(found, maxUnlistedUnloads);
        if (deferred > 0) {
          log.warn(
            { deferred, maxUnlistedUnloads },
            'start-up: the model server lists more models than modelsync installed and one resync unloads; the rest wait for the resyncs',
          );
          telemetry?.repairsDeferred?.(deferred);
        }
        // The capabilities and settings the loader takes are named alike (LoaderDeps).
        const loader = createLoader(
          {
            ...capabilities,
            ...settings,
            telemetry,
            random,
            scheduler,
            log: log.child({ component: 'loader' }),
          },
          inPlace,
        );
        settings.onStart?.({ inPlace, loader, deferred });
        // Resync and drift repair: one trigger stream (shared: one timer paces both) re-reads the config and runs
        // the repair step, whose ops join the config's ops on their way to the loader.
        const { resync } = settings;
        const triggers$ = resync && resyncTriggers(resync, scheduler).pipe(share());
        const repairs$ =
          resync &&
          triggers$?.pipe(
            repairDrift(
              {
                ...resync,
                maxUnlistedUnloads,
                records: loader,
                serverIndex: () => abortable((signal) => server.loadedModels(signal)),
                log: log.child({ component: 'resync' }),
                telemetry: telemetry ?? noTelemetry,
              },
              scheduler,
            ),
          );
        // The capabilities and settings the pipeline takes are named alike too (SyncDeps).
        return syncModels({
          ...capabilities,
          ...settings,
          telemetry,
          inPlace: inPlaceSnapshot(inPlace),
          installed: settings.keepInstalledWhileRejected === false ? undefined : installedInForce(inPlace),
          scheduler,
          loader,
          opOperators: repairs$
            ? [...(settings.opOperators ?? []), mergeWith(repairs$)]
            : settings.opOperators,
          rereads$: triggers$,
        });
      }),
      tap((event) => {
        if (event._tag === 'Ready')
          log.info(
            { modelCount: event.modelCount, durationMs: scheduler.now() - started },
            'start-up sync complete; ready',
          );
      }),
    );
  });
