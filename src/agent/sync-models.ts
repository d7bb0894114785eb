/** The composed pipeline: config-source events to accepted snapshots to ModelOps (and, with a loader, to results). */
import type { Either } from 'fp-ts/Either';
import * as E from 'fp-ts/Either';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  concatMap,
  connect,
  EMPTY,
  first,
  identity,
  map,
  merge,
  mergeWith,
  startWith,
  switchMap,
  take,
  tap,
  type MonoTypeOperatorFunction,
  type Observable,
  type SchedulerLike,
} from 'rxjs';
import { diff } from '../core/diff';
import type { ConfigError } from '../core/errors';
import type { ModelOp } from '../core/model-op';
import { readyEvent, type AgentEvent } from '../core/model-status';
import { emptySnapshot, type Snapshot } from '../core/snapshot';
import {
  applyModelOps,
  type OpRunner,
  coalesceBursts,
  decodeAndReport,
  decodeSnapshot,
  keepValid,
  readConfig,
  announcesNewContent,
  isSwapStep,
  selectConfigEvents,
  skipUnchangedReads,
  toModelOps,
  logUnservedModels,
  warnUnservedSchemes,
} from '../pipeline';
import { noTelemetry, type ConfigSource, type FsEvent, type Telemetry } from '../ports';
import { guardedTelemetry } from '../loader';

/** What the config half of the pipeline runs on. */
export interface ConfigPipelineDeps {
  readonly configSource: ConfigSource;
  /** What is in place already (`inPlaceSnapshot`, recovered at start-up); the first config is diffed against it. */
  readonly inPlace: Snapshot;
  /**
   * The models installed before the start (the specs of the markers recovered from the model dir): the config in
   * force while every read since the start is rejected (or models.json is missing). Absent or empty: none.
   */
  readonly installed?: Snapshot;
  readonly log: Logger;
  /** Quiet time after a burst of events before the trailing read (must exceed chokidar's 50 ms throttle). */
  readonly settleMs: number;
  /** The schemes the storage providers serve; a model naming another one is warned about. Absent: no check. */
  readonly servedSchemes?: ReadonlyArray<string> | undefined;
  readonly scheduler?: SchedulerLike;
  /**
   * An integrator's operators on the accepted snapshots, applied in order between `keepValid` and `toModelOps`
   * (see docs/extending.md for why there). The `config accepted` log line counts the models before them.
   */
  readonly snapshotOperators?: ReadonlyArray<MonoTypeOperatorFunction<Snapshot>>;
  /** Hears of every config read (accepted with its checksum, rejected with its reason, or unchanged). */
  readonly telemetry?: Telemetry;
  /** Each emission re-reads models.json though no event came (a resync); absent: events only. */
  readonly rereads$?: Observable<unknown>;
}

const startTrigger: FsEvent = { event: 'start', name: '' };
const rereadTrigger: FsEvent = { event: 'resync', name: '' };

/** The config-dir events that can mean models.json changed, and a trigger for each re-read asked for. */
const configTriggers = (deps: Pick<ConfigPipelineDeps, 'configSource' | 'rereads$'>): Observable<FsEvent> =>
  deps.configSource.events$.pipe(
    selectConfigEvents(),
    mergeWith(deps.rereads$?.pipe(map(() => rereadTrigger)) ?? EMPTY),
  );

/** Applies `operators` in order; no operators: the source as it is. */
const throughAll =
  <T>(operators: ReadonlyArray<MonoTypeOperatorFunction<T>> = []): MonoTypeOperatorFunction<T> =>
  (source$) =>
    operators.reduce((stream$, operator) => stream$.pipe(operator), source$);

/** The sha256 of a config's text, in hex: which config is in force, without showing it. */
const checksumOf = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The current config, then every accepted change of it, for as long as subscribed. */
export const acceptedSnapshots = (
  deps: Omit<ConfigPipelineDeps, 'inPlace' | 'snapshotOperators'>,
): Observable<Snapshot> => {
  const telemetry = guardedTelemetry(deps.telemetry ?? noTelemetry, deps.log);
  return configTriggers(deps).pipe(
    startWith(startTrigger),
    coalesceBursts(
      { quietMs: deps.settleMs, isDirect: announcesNewContent, isTrailingOnly: isSwapStep },
      deps.scheduler,
    ),
    readConfig(deps.configSource.read),
    skipUnchangedReads(() => telemetry.configRead('unchanged')),
    decodeAndReport(telemetry, checksumOf),
    keepValid(deps.log, deps.installed),
    tap((snapshot) => {
      if (snapshot !== deps.installed) deps.log.info({ modelCount: snapshot.size }, 'config accepted');
    }),
    deps.servedSchemes === undefined ? identity : warnUnservedSchemes(deps.servedSchemes, deps.log),
  );
};

/** The ops for the current config, then for every accepted change of it, for as long as subscribed. */
export const modelOps = (deps: ConfigPipelineDeps): Observable<ModelOp> =>
  acceptedSnapshots(deps).pipe(throughAll(deps.snapshotOperators), toModelOps(deps.inPlace));

/** What `syncModels` runs on: the config pipeline's deps and the loader that applies the ops. */
export interface SyncDeps extends ConfigPipelineDeps {
  readonly loader: OpRunner & { readonly idle$: Observable<boolean> };
  /** Operators on the ops, applied in order between `toModelOps` and the loader (e.g. `mergeWith(moreOps$)`). */
  readonly opOperators?: ReadonlyArray<MonoTypeOperatorFunction<ModelOp>>;
}

/**
 * Keeps the models in sync with the config: config changes become ops, the loader applies them, and `Ready` is
 * emitted once the first accepted config has been applied (every model of it loaded or failed, every model not
 * in it removed). Completes when the config source and the loader are done.
 */
export const syncModels = (deps: SyncDeps): Observable<AgentEvent> =>
  acceptedSnapshots(deps).pipe(
    throughAll(deps.snapshotOperators),
    connect((snapshot$) => {
      const firstConfig = firstConfigWait();
      return merge(
        // Subscribed first, so the first snapshot's ops reach the loader before readiness looks at it.
        snapshot$.pipe(
          toModelOps(deps.inPlace),
          throughAll(deps.opOperators),
          tap((op) => firstConfig.noteOp(op)),
          applyModelOps(deps.loader),
          concatMap((event) => [event, ...firstConfig.noteEvent(event)]),
        ),
        snapshot$.pipe(
          take(1),
          switchMap((snapshot) => {
            const now = firstConfig.seal(snapshot.size);
            // Else the first config's last model settling (above) or an idle loader, whichever comes first: a
            // later config's work (a big download, a hung load) keeps the loader busy, and does not hold Ready.
            return now.length > 0
              ? now
              : deps.loader.idle$.pipe(
                  first((idle) => idle),
                  concatMap(() => firstConfig.claim()),
                );
          }),
        ),
      );
    }),
  );

const settledPhases: ReadonlySet<string> = new Set(['Loaded', 'Failed', 'Removed']);

/**
 * The models the first accepted config's ops named (those that reached the loader before `seal`, when readiness
 * takes the first snapshot), until each is loaded, failed or removed; a model a later config removes is no longer
 * waited for (the loader may drop it unseen). `seal`, `noteEvent` and `claim` give `Ready` once, the first time it
 * is due: after the event that settled the last model.
 */
const firstConfigWait = () => {
  const waiting = new Set<string>();
  let modelCount: number | undefined;
  let claimed = false;
  const claim = (): AgentEvent[] => {
    if (claimed || modelCount === undefined) return [];
    claimed = true;
    return [readyEvent(modelCount)];
  };
  const dueNow = (): AgentEvent[] => (waiting.size === 0 ? claim() : []);
  return {
    noteOp: (op: ModelOp): void => {
      if (modelCount === undefined) waiting.add(op.modelName);
      else if (op._tag === 'Remove') waiting.delete(op.modelName);
    },
    noteEvent: (event: AgentEvent): AgentEvent[] => {
      if (event._tag === 'Status' && settledPhases.has(event.status.phase))
        waiting.delete(event.status.modelName);
      return dueNow();
    },
    seal: (count: number): AgentEvent[] => {
      modelCount = count;
      return dueNow();
    },
    claim,
  };
};

/**
 * The ops for the config as it is now, or why it cannot be used (`--dry-run --once`); with `servedSchemes`, a
 * model naming another scheme is warned about on `log`.
 */
export const currentModelOps = (
  deps: Pick<ConfigPipelineDeps, 'configSource' | 'inPlace' | 'servedSchemes'> & {
    readonly log?: Pick<Logger, 'warn'>;
  },
): Observable<Either<ConfigError, ReadonlyArray<ModelOp>>> =>
  deps.configSource.read().pipe(
    decodeSnapshot(),
    map(
      E.map((snapshot) => {
        if (deps.servedSchemes !== undefined && deps.log !== undefined)
          logUnservedModels(deps.log, deps.servedSchemes, emptySnapshot, snapshot);
        return diff(deps.inPlace, snapshot, true);
      }),
    ),
  );
