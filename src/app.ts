/** The composition root: the pipeline from config-dir events to ModelOps (and, with a loader, to results). */
import type { Either } from 'fp-ts/Either';
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import {
  connect,
  first,
  map,
  merge,
  startWith,
  switchMap,
  take,
  tap,
  type Observable,
  type SchedulerLike,
} from 'rxjs';
import { diff } from './core/diff';
import type { ConfigError } from './core/errors';
import type { ModelOp } from './core/model-op';
import { readyEvent, type AgentEvent } from './core/model-status';
import type { Snapshot } from './core/snapshot';
import { applyModelOps, type OpRunner } from './pipeline/apply-model-ops';
import { coalesceBursts } from './pipeline/coalesce-bursts';
import { decodeSnapshot } from './pipeline/decode-snapshot';
import { keepValid } from './pipeline/keep-valid';
import { readConfig } from './pipeline/read-config';
import { selectConfigEvents } from './pipeline/select-config-events';
import { skipUnchangedReads } from './pipeline/skip-unchanged-reads';
import { toModelOps } from './pipeline/to-model-ops';
import type { ConfigSource, FsEvent } from './ports';

export interface ConfigPipelineDeps {
  readonly configSource: ConfigSource;
  /** What is in place already (recovered at start-up); the first config is diffed against it. */
  readonly initial: Snapshot;
  readonly log: Logger;
  /** Quiet time after a burst of events before the trailing read (must exceed chokidar's 50 ms throttle). */
  readonly settleMs: number;
  readonly scheduler?: SchedulerLike;
}

const startTrigger: FsEvent = { event: 'start', name: '' };

/** The current config, then every accepted change of it, for as long as subscribed. */
export const acceptedSnapshots = (deps: Omit<ConfigPipelineDeps, 'initial'>): Observable<Snapshot> =>
  deps.configSource.events$.pipe(
    selectConfigEvents(),
    startWith(startTrigger),
    coalesceBursts(deps.settleMs, deps.scheduler),
    readConfig(deps.configSource.read),
    skipUnchangedReads(),
    decodeSnapshot(),
    keepValid(deps.log),
    tap((snapshot) => deps.log.info({ modelCount: snapshot.size }, 'config accepted')),
  );

/** The ops for the current config, then for every accepted change of it, for as long as subscribed. */
export const modelOps = (deps: ConfigPipelineDeps): Observable<ModelOp> =>
  acceptedSnapshots(deps).pipe(toModelOps(deps.initial));

export interface AgentDeps extends ConfigPipelineDeps {
  readonly loader: OpRunner & { readonly idle$: Observable<boolean> };
}

/**
 * The whole agent: config changes become ops, the loader applies them, and `Ready` is emitted once the first
 * accepted config has been applied (every model of it loaded or failed, every model not in it removed).
 */
export const agent = (deps: AgentDeps): Observable<AgentEvent> =>
  acceptedSnapshots(deps).pipe(
    connect((snapshot$) =>
      merge(
        // Subscribed first, so the first snapshot's ops reach the loader before readiness looks at it.
        snapshot$.pipe(toModelOps(deps.initial), applyModelOps(deps.loader)),
        snapshot$.pipe(
          take(1),
          switchMap((snapshot) =>
            deps.loader.idle$.pipe(
              first((idle) => idle),
              map(() => readyEvent(snapshot.size)),
            ),
          ),
        ),
      ),
    ),
  );

/** The ops for the config as it is now, or why it cannot be used (`--once`). */
export const currentModelOps = (
  deps: Pick<ConfigPipelineDeps, 'configSource' | 'initial'>,
): Observable<Either<ConfigError, ReadonlyArray<ModelOp>>> =>
  deps.configSource
    .read()
    .pipe(decodeSnapshot(), map(E.map((snapshot) => diff(deps.initial, snapshot, true))));
