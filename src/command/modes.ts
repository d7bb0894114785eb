/** The CLI's modes as Observables of output: print the ops (`--dry-run`) or keep in sync; what every mode checks at start. */
import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import type { Logger } from 'pino';
import {
  catchError,
  concatWith,
  defer,
  endWith,
  exhaustMap,
  from,
  ignoreElements,
  map,
  mergeMap,
  NEVER,
  of,
  race,
  take,
  takeUntil,
  tap,
  throwError,
  timer,
  type Observable,
} from 'rxjs';
import { currentModelOps, ModelDirUnusable, modelOps, startAgent, type AgentCapabilities } from '../agent';
import type { Env } from '../core/env';
import { describeConfigError, errorCode, type EffectError } from '../core/errors';
import type { AppConfig } from '../core/flags/app-config';
import { shownModelOpJson } from '../core/model-op';
import { redact, redactUri } from '../core/redact';
import { emptySnapshot } from '../core/snapshot';
import type { Loader } from '../loader';
import {
  agentPortSettings,
  agentSettings,
  capabilities,
  quickCallsUnderDirs,
  settleMs,
  SurfaceBindFailed,
  withKubeEvents,
  withSurface,
  type AgentRun,
} from '../wiring';
import { releasingHeap, v8HeapRelease } from './heap-release';
import { packageVersion } from './package-version';

/** What a mode emits: a line for stdout, or an exit code that ends the process. */
export type Output =
  { readonly _tag: 'Line'; readonly line: string } | { readonly _tag: 'Exit'; readonly code: number };

/** A JSON line for stdout, through the redaction: stdout is often kept in CI logs, so no secret goes there either. */
export const jsonLine = (value: unknown): Output => ({ _tag: 'Line', line: redact(JSON.stringify(value)) });
export const exit = (code: number): Output => ({ _tag: 'Exit', code });

/** The log line and exit 2 of settings a start cannot use (a malformed variable, an unreadable CA bundle …). */
export const settingsInvalid = (log: Logger, reason: string): Observable<Output> => {
  log.error({ reason }, 'cannot start: the settings are invalid');
  return of(exit(2));
};

/** What is wrong with a model dir its recovery refused, in words from its errno (no I/O: the dir may hang). */
const modelDirProblem = (failure: EffectError): string => {
  if (failure.kind === 'timeout') return 'not answering (a hung mount?)';
  const code = errorCode(failure.cause) ?? '';
  if (['EEXIST', 'ENOTDIR'].includes(code)) return 'not a dir';
  if (code === 'ENOENT') return 'missing, or a dangling link';
  if (['EACCES', 'EPERM'].includes(code)) return 'not permitted (not listable or not writable)';
  return 'not usable';
};

/** The line and exit 1 of a start whose model dir cannot be used: a bad `--model-dir` or a broken volume, no bug. */
export const modelDirUnusable = (
  log: Logger,
  modelDir: string,
  { failure }: ModelDirUnusable,
): Observable<Output> => {
  log.error(
    { modelDir, problem: modelDirProblem(failure), reason: failure.message },
    'cannot start: the model dir cannot be used; check --model-dir and its volume',
  );
  return of(exit(1));
};

/**
 * What a real start builds from `config` and `env` before it does anything: the edges (storage with its proxies,
 * CA bundle, headers and store settings; the model dir; the server client; the config source) and the agent port's
 * settings; the Left says which setting cannot be used. Every mode checks the same, a dry run included.
 */
export const startOf = (config: AppConfig, log: Logger, env: Env) =>
  pipe(
    E.Do,
    E.bind('edges', () => capabilities(config, log, env)),
    E.bind('agentPort', () => agentPortSettings(config, env)),
  );

/**
 * `--dry-run`: one JSON line per ModelOp, live (or, with `--once`, for the current config, then exit: 1 when
 * it is invalid). Nothing is in place for a dry run, so the first config is all Adds. A model whose storage
 * scheme no provider serves gets a warn line on the log. `env` locates the API server for `--source kube-api`.
 * Settings a real start refuses exit 2 here too: a dry run that passes is one a start would not refuse.
 */
export const dryRunMode = (config: AppConfig, log: Logger, env: Env = {}): Observable<Output> => {
  const start = startOf(config, log, env);
  if (E.isLeft(start)) return settingsInvalid(log, start.left);
  const { configSource, servedSchemes } = start.right.edges;
  const deps = { configSource, inPlace: emptySnapshot, servedSchemes, log };
  if (config.once) {
    return currentModelOps(deps).pipe(
      mergeMap((result) => {
        if (E.isLeft(result)) {
          log.error({ file: result.left.file, configError: result.left }, describeConfigError(result.left));
          return of(exit(1));
        }
        return from([...result.right.map((op) => jsonLine(shownModelOpJson(op))), exit(0)]);
      }),
    );
  }
  return modelOps({ ...deps, settleMs }).pipe(map((op) => jsonLine(shownModelOpJson(op))));
};

/** What the process tells a mode: stop (SIGTERM, SIGINT) and resync now (SIGHUP). */
export interface ModeSignals {
  readonly shutdown$: Observable<unknown>;
  readonly resync$: Observable<unknown>;
}

const noSignals: ModeSignals = { shutdown$: NEVER, resync$: NEVER };

/**
 * The agent on the real edges: keeps the model dir and the model server equal to models.json, resyncing every
 * `--resync-interval` and on `signals.resync$`. Prints nothing (statuses are logged); exits 2 at once when `env`
 * holds malformed download headers. On `signals.shutdown$` it shuts down gracefully, then exits 0.
 */
export const syncMode = (
  config: AppConfig,
  log: Logger,
  env: Env,
  signals: ModeSignals = noSignals,
): Observable<Output> => {
  const start = startOf(config, log, env);
  if (E.isLeft(start)) return settingsInvalid(log, start.left);
  const { edges, agentPort } = start.right;
  // The HTTP surface's one seam: it wraps how the agent starts.
  const drains: Array<() => Promise<void>> = [];
  const surface = { stopping$: signals.shutdown$, drains, agentPort };
  // Kubernetes Events inside the surface: they hear the telemetry the surface gives the run.
  const flushes: Array<() => Promise<void>> = [];
  const reported = withKubeEvents(config, log, env, flushes)(startAgent);
  const surfaced: AgentRun = config.httpPort === 0 ? reported : withSurface(config, log, surface)(reported);
  const run = releasingHeap(v8HeapRelease, log)(surfaced);
  const { modelDir, protocol } = config;
  const serverUrl = redactUri(config.serverUrl);
  return defer(() => {
    log.info(
      { version: packageVersion, ...configWhere(config), modelDir, serverUrl, protocol },
      'modelsync starting',
    );
    quickCallsUnderDirs(config, log);
    let loader: Loader | undefined;
    const agent$ = run(watchUntil(edges, signals.shutdown$), {
      ...agentSettings(config, log),
      // Every --resync-interval (0: only on SIGHUP) and on each resync signal.
      resync: {
        intervalMs: config.resyncInterval,
        // What it repairs is logged as it goes; one asked for that finds nothing would otherwise leave no line.
        signal$: signals.resync$.pipe(
          tap(() =>
            log.info({ signal: 'SIGHUP' }, 'resync asked for: re-reading the config and the model server'),
          ),
        ),
      },
      onStart: (start) => (loader = start.loader),
    });
    // The first shutdown signal drains: downloads stop (their staging dirs removed), calls to the model server
    // already sent may finish; the agent is then unsubscribed, at once or after --shutdown-timeout, which aborts
    // what still runs. It then completes, and the process exits 0.
    const timeoutMs = config.shutdownTimeout;
    let deadline: number | undefined;
    const stopped$ = signals.shutdown$.pipe(
      take(1),
      exhaustMap(() => {
        const started = performance.now();
        deadline = started + timeoutMs;
        log.info(
          { timeoutMs },
          'shutting down: downloads stop; calls to the model server in flight may finish',
        );
        const drained = Promise.all([loader?.drain(), ...drains.map((drain) => drain())]).then(() => true);
        return race(from(drained), timer(timeoutMs).pipe(map(() => false))).pipe(
          map((done) => {
            const durationMs = Math.round(performance.now() - started);
            if (done) log.info({ durationMs }, 'modelsync stopped');
            else
              log.warn(
                { durationMs, timeoutMs },
                'modelsync stopped: calls still in flight at the shutdown timeout were aborted',
              );
          }),
        );
      }),
    );
    // The Kubernetes Events of the last statuses (a load that ended while draining) are written off the agent's
    // path, after it ended: the exit waits for them, never past the shutdown timeout.
    const flushed$ = defer(() => {
      const leftMs = Math.max(0, (deadline ?? performance.now()) - performance.now());
      const flushed = Promise.all(flushes.map((flush) => flush())).then(() => true);
      return race(from(flushed), timer(leftMs).pipe(map(() => false))).pipe(
        map((done) => {
          if (!done)
            log.warn({ timeoutMs }, 'Kubernetes Events not written by the shutdown timeout were dropped');
        }),
      );
    });
    const untilStopped$ = agent$.pipe(takeUntil(stopped$));
    return untilStopped$.pipe(
      concatWith(flushed$),
      ignoreElements(),
      endWith(exit(0)),
      // A surface port that cannot be bound was logged; the process ends with 1, as for bad settings.
      catchError((error: unknown) => {
        if (error instanceof ModelDirUnusable) return modelDirUnusable(log, modelDir, error);
        return error instanceof SurfaceBindFailed ? of(exit(1)) : throwError(() => error);
      }),
    );
  });
};

/** The capabilities with a config watcher that stops on `stop$` (shutdown: no config change is taken up). */
const watchUntil = <C extends AgentCapabilities>(edges: C, stop$: Observable<unknown>): C => ({
  ...edges,
  configSource: { ...edges.configSource, events$: edges.configSource.events$.pipe(takeUntil(stop$)) },
});

/** Where the config is read, for a start line: the ConfigMap with `--source kube-api` (no dir is read), else the dir. */
export const configWhere = ({ source, configDir, configmap, namespace }: AppConfig) =>
  source === 'kube-api' ? { source, configmap, namespace } : { source, configDir };
