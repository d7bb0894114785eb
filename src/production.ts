/** Production wiring: builds the real edges from an AppConfig and runs a mode of modelsync as one Observable. */
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import { concatMap, EMPTY, from, map, mergeMap, of, retry, switchMap, timer, type Observable } from 'rxjs';
import { agent as agentPipeline, currentModelOps, modelOps } from './app';
import type { AppConfig } from './core/app-config';
import { backoffDelay } from './core/backoff';
import { describeConfigError, toEffectError } from './core/errors';
import { modelOpToJson } from './core/model-op';
import { emptySnapshot } from './core/snapshot';
import { parseHostHeaders } from './core/storage-uri';
import { configDirSource } from './edge/config-dir';
import { loadJournal } from './edge/load-journal';
import { modelDirStore } from './edge/model-dir';
import { torchServeModelServer } from './edge/model-server-torchserve';
import { v2ModelServer } from './edge/model-server-v2';
import { httpStorage } from './edge/storage-http';
import { localFileStorage } from './edge/storage-local';
import { abortable } from './loader/abortable';
import { inPlaceSnapshot } from './core/in-place';
import { recoverModelDir } from './loader/in-place';
import { createLoader } from './loader/loader';
import { routeStorage } from './loader/storage-router';
import type { ModelServer } from './ports';

/** What a mode emits: a line for stdout, or an exit code that ends the process. */
export type Output =
  { readonly _tag: 'Line'; readonly line: string } | { readonly _tag: 'Exit'; readonly code: number };

const line = (text: string): Output => ({ _tag: 'Line', line: text });
const exit = (code: number): Output => ({ _tag: 'Exit', code });

const configSourceFor = (config: AppConfig, log: Logger) =>
  configDirSource({
    dir: config.configDir,
    log: log.child({ component: 'config' }),
    pollMs: config.watchPollMs,
  });

/** `--dry-run`: one JSON line per ModelOp, live (or, with `--once`, for the current config, then exit). */
export const dryRun = (config: AppConfig, log: Logger): Observable<Output> => {
  const configSource = configSourceFor(config, log);
  const initial = emptySnapshot;
  if (config.once) {
    return currentModelOps({ configSource, initial }).pipe(
      mergeMap((result) => {
        if (E.isLeft(result)) {
          log.error({ file: result.left.file, configError: result.left }, describeConfigError(result.left));
          return of(exit(1));
        }
        return from([...result.right.map((op) => line(JSON.stringify(modelOpToJson(op)))), exit(0)]);
      }),
    );
  }
  return modelOps({ configSource, initial, log, settleMs: config.settleMs }).pipe(
    map((op) => line(JSON.stringify(modelOpToJson(op)))),
  );
};

const modelServerFor = (config: AppConfig): ModelServer =>
  config.protocol === 'torchserve'
    ? torchServeModelServer({
        baseUrl: config.serverUrl,
        timeoutMs: config.requestTimeoutMs,
        loadTimeoutMs: config.loadTimeoutMs,
        ...(config.torchserveTokenFile !== undefined ? { tokenFile: config.torchserveTokenFile } : {}),
      })
    : v2ModelServer({
        baseUrl: config.serverUrl,
        timeoutMs: config.requestTimeoutMs,
        loadTimeoutMs: config.loadTimeoutMs,
      });

/** The server's loaded models; the server container starts beside us, so keep asking until it answers. */
const loadedModels = (server: ModelServer, config: AppConfig, log: Logger): Observable<ReadonlySet<string>> =>
  abortable((signal) => server.loadedModels(signal)).pipe(
    retry({
      delay: (error: unknown, attempt) => {
        log.warn(
          { err: toEffectError(error), serverUrl: config.serverUrl, attempt },
          'model server not answering yet; waiting for it',
        );
        return timer(backoffDelay(attempt, config.retryBaseMs, config.retryMaxMs, Math.random));
      },
    }),
  );

/**
 * The whole agent: recover the model dir, learn what the server has loaded, then keep both equal to models.json.
 * `env` supplies KServe's per-host download headers (`<host>-headers`).
 */
export const agent = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
): Observable<Output> => {
  const headers = parseHostHeaders(env);
  if (E.isLeft(headers)) {
    log.error({ reason: headers.left }, 'invalid download headers');
    return of(exit(2));
  }
  const store = modelDirStore({ root: config.modelDir, log: log.child({ component: 'model-dir' }) });
  const journal = loadJournal({ root: config.modelDir });
  const server = modelServerFor(config);
  const download = routeStorage([
    localFileStorage(),
    httpStorage({
      headersByHost: headers.right,
      connectTimeoutMs: config.requestTimeoutMs,
      idleTimeoutMs: config.requestTimeoutMs,
    }),
  ]);
  const started = Date.now();
  // The model dir first: it creates M, which some servers need before they start.
  return abortable(() => recoverModelDir(store, journal)).pipe(
    concatMap((disk) => loadedModels(server, config, log).pipe(map((loaded) => ({ ...disk, loaded })))),
    switchMap((inPlace) => {
      log.info(
        {
          onDisk: inPlace.onDisk.size,
          loaded: inPlace.loaded.size,
          unconfirmed: inPlace.unconfirmed?.size ?? 0,
        },
        'recovered what is in place',
      );
      const loader = createLoader(
        {
          store,
          journal,
          server,
          download,
          log: log.child({ component: 'loader' }),
          downloadConcurrency: config.downloadConcurrency,
          loadConcurrency: config.loadConcurrency,
          retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs, maxAttempts: config.maxAttempts },
        },
        inPlace,
      );
      return agentPipeline({
        configSource: configSourceFor(config, log),
        initial: inPlaceSnapshot(inPlace),
        log,
        settleMs: config.settleMs,
        loader,
      });
    }),
    mergeMap((event) => {
      if (event._tag === 'Ready')
        log.info(
          { modelCount: event.modelCount, durationMs: Date.now() - started },
          'start-up sync complete; ready',
        );
      return EMPTY;
    }),
  );
};
