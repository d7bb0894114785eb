/** The CLI's two modes as Observables of output: print the ops (`--dry-run`), or keep the models in sync. */
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import {
  catchError,
  defer,
  EMPTY,
  from,
  ignoreElements,
  map,
  merge,
  mergeMap,
  of,
  type Observable,
} from 'rxjs';
import { currentModelOps, modelOps } from './app';
import type { AppConfig } from './core/app-config';
import { describeConfigError } from './core/errors';
import { modelOpToJson, type ModelOp } from './core/model-op';
import { redact } from './core/redact';
import { redactUri } from './core/redact';
import { emptySnapshot } from './core/snapshot';
import { packageVersion } from './package-version';
import { agentSettings, capabilities, configSourceFor } from './production';
import { servedSchemes } from './production-storage';
import { surfaceFor, type Surface } from './production-surface';
import { startAgent } from './start-agent';

/** What a mode emits: a line for stdout, or an exit code that ends the process. */
export type Output =
  { readonly _tag: 'Line'; readonly line: string } | { readonly _tag: 'Exit'; readonly code: number };

const line = (text: string): Output => ({ _tag: 'Line', line: text });

/** An op as the JSON line `--dry-run` prints: stdout is often kept in CI logs, so no secret goes there either. */
const opLine = (op: ModelOp): Output => line(redact(JSON.stringify(modelOpToJson(op))));
const exit = (code: number): Output => ({ _tag: 'Exit', code });

/**
 * `--dry-run`: one JSON line per ModelOp, live (or, with `--once`, for the current config, then exit: 1 when
 * it is invalid). Nothing is in place for a dry run, so the first config is all Adds. A model whose storage
 * scheme no provider serves gets a warn line on the log.
 */
export const dryRunMode = (config: AppConfig, log: Logger): Observable<Output> => {
  const configSource = configSourceFor(config, log);
  const inPlace = emptySnapshot;
  const schemes = servedSchemes(config, log);
  if (config.once) {
    return currentModelOps({ configSource, inPlace, servedSchemes: schemes, log }).pipe(
      mergeMap((result) => {
        if (E.isLeft(result)) {
          log.error({ file: result.left.file, configError: result.left }, describeConfigError(result.left));
          return of(exit(1));
        }
        return from([...result.right.map(opLine), exit(0)]);
      }),
    );
  }
  return modelOps({
    configSource,
    inPlace,
    log,
    settleMs: config.settleMs,
    servedSchemes: schemes,
  }).pipe(map(opLine));
};

/** Serves `surface` while subscribed; a port that cannot be bound ends the process with exit code 1. */
const serveSurface = (surface: Surface, port: number, log: Logger): Observable<Output> =>
  surface.serve$.pipe(
    ignoreElements(),
    catchError((error: unknown) => {
      log.error({ err: error, port }, 'cannot serve the HTTP surface (--http-port)');
      return of(exit(1));
    }),
  );

/**
 * The agent on the real edges: keeps the model dir and the model server equal to models.json, and serves the
 * HTTP surface on `--http-port` (unless 0) from the start, before the model server answers. Prints nothing
 * (statuses are logged); exits 2 at once when `env` holds malformed download headers.
 */
export const syncMode = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
): Observable<Output> => {
  const surface = config.httpPort === 0 ? undefined : surfaceFor(config, log);
  const edges = capabilities(config, log, env, surface?.telemetry);
  if (E.isLeft(edges)) {
    log.error({ reason: edges.left }, 'cannot start: the settings are invalid');
    return of(exit(2));
  }
  const { configDir, modelDir, serverUrl, protocol } = config;
  return defer(() => {
    const shownServerUrl = redactUri(serverUrl);
    log.info(
      { version: packageVersion, configDir, modelDir, serverUrl: shownServerUrl, protocol },
      'modelsync starting',
    );
    const settings = agentSettings(config, log);
    const agent$ = startAgent(edges.right, {
      ...settings,
      ...surface?.settings,
      opOperators: [...(settings.opOperators ?? []), ...(surface?.settings.opOperators ?? [])],
    });
    if (surface === undefined) return agent$.pipe(mergeMap(() => EMPTY));
    return merge(
      serveSurface(surface, config.httpPort, log),
      agent$.pipe(
        surface.observe,
        mergeMap(() => EMPTY),
      ),
    );
  });
};
