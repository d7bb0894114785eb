/** `--once` without `--dry-run`: sync the config as it is now, then exit with what happened (docs/operating.md). */
import type { Logger } from 'pino';
import {
  catchError,
  defer,
  EMPTY,
  exhaustMap,
  filter,
  first,
  from,
  map,
  merge,
  mergeMap,
  NEVER,
  of,
  race,
  take,
  takeWhile,
  throwError,
  timer,
  type Observable,
} from 'rxjs';
import * as E from 'fp-ts/Either';
import { ModelDirUnusable, ServerNotAnswering, startAgent } from '../agent';
import type { Env } from '../core/env';
import type { AppConfig } from '../core/flags/app-config';
import type { ModelStatus } from '../core/model-status';
import { redactUri } from '../core/redact';
import type { Loader } from '../loader';
import { agentSettings } from '../wiring';
import {
  configWhere,
  exit,
  jsonLine,
  modelDirUnusable,
  settingsInvalid,
  startOf,
  type Output,
} from './modes';
import { packageVersion } from './package-version';

/** What a failure looks like on one-shot's stdout: one JSON line per model not Loaded (URIs never shown). */
const failureLine = ({ modelName, phase, errorKind, reason }: ModelStatus): Output =>
  jsonLine({ model: modelName, phase, errorKind: errorKind ?? null, reason: reason ?? null });

/** `--once`'s exit when the model server gave no answer within `--server-wait-timeout`. */
export const serverNotAnsweringExitCode = 3;

/**
 * `--once` without `--dry-run`: syncs the config as it is now (no watching, no resync), then exits 0, 1, 2 or 3 as
 * docs/operating.md ("One-shot mode") says, after one stdout line per model that is not Loaded. On `stop$` (a
 * signal) it exits 1 once drained as sync mode drains (downloads stopped and their staging dirs removed, calls to
 * the model server in flight given up to --shutdown-timeout): an exit at once left the staging dirs behind.
 */
export const oneShotMode = (
  config: AppConfig,
  log: Logger,
  env: Env,
  stop$: Observable<unknown> = NEVER,
): Observable<Output> => {
  const start = startOf(config, log, env);
  if (E.isLeft(start)) return settingsInvalid(log, start.left);
  const { edges } = start.right;
  return defer(() => {
    log.info({ version: packageVersion, ...configWhere(config) }, 'modelsync one-shot sync starting');
    let loader: Loader | undefined;
    let deferred = 0;
    let stopped = false;
    const stopped$ = stop$.pipe(
      take(1),
      exhaustMap(() => {
        stopped = true;
        log.error('one-shot sync: stopped by a signal before it finished; exiting as failed');
        const drained = (loader?.drain() ?? Promise.resolve()).then(() => true);
        return race(from(drained), timer(config.shutdownTimeout).pipe(map(() => false)));
      }),
      map((): Output => exit(1)),
    );
    const once = { ...edges, configSource: { ...edges.configSource, events$: EMPTY } };
    const synced$ = startAgent(once, {
      ...agentSettings(config, log),
      ...(config.serverWaitTimeout > 0 ? { serverWaitMs: config.serverWaitTimeout } : {}),
      keepInstalledWhileRejected: false,
      onStart: (start) => {
        loader = start.loader;
        deferred = start.deferred;
      },
    }).pipe(
      first((event) => event._tag === 'Ready', undefined),
      mergeMap((ready): Observable<Output> => {
        if (ready === undefined) {
          log.error('one-shot sync: no usable config; nothing was changed');
          return of(exit(1));
        }
        const statuses = [...(loader?.statuses().values() ?? [])];
        const failed = statuses.filter((status) => status.phase !== 'Loaded');
        const done = { modelCount: statuses.length, failed: failed.length };
        if (failed.length === 0) log.info(done, 'one-shot sync done: every model is loaded');
        else log.error(done, 'one-shot sync done: some models are not loaded');
        // No resync follows to unload the rest: the server still has models no config lists.
        if (deferred > 0)
          log.error(
            { left: deferred, maxUnlistedUnloads: config.maxUnlistedUnloads },
            'one-shot sync done: models no config lists were left loaded (more than --max-unlisted-unloads)',
          );
        const code = failed.length === 0 && deferred === 0 ? 0 : 1;
        return from([...failed.map(failureLine), exit(code)]);
      }),
      catchError((error: unknown) => {
        if (error instanceof ModelDirUnusable) return modelDirUnusable(log, config.modelDir, error);
        if (!(error instanceof ServerNotAnswering)) return throwError(() => error);
        log.error(
          {
            serverUrl: redactUri(config.serverUrl),
            waitedMs: error.waitedMs,
            reason: error.lastError.message,
          },
          'one-shot sync: the model server did not answer within --server-wait-timeout; nothing was loaded',
        );
        return of(exit(serverNotAnsweringExitCode));
      }),
    );
    // Draining keeps the agent subscribed (unsubscribing would abort it at once); what it says then is not the outcome.
    return merge(synced$.pipe(filter(() => !stopped)), stopped$).pipe(
      takeWhile((output) => output._tag !== 'Exit', true),
    );
  });
};
