/**
 * The storage initializer: `modelsync <uri> <dest> [<uri> <dest> …]`, as KServe's `storage-initializer` init
 * container is run. Downloads each URI into its dest with the agent's providers, guards and caps, then exits.
 */
import { downloadProgressFields, downloadProgressMessage } from '../core/download-progress';
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import {
  catchError,
  concatMap,
  defer,
  every,
  finalize,
  from,
  map,
  merge,
  NEVER,
  of,
  retry,
  share,
  take,
  takeUntil,
  throwError,
  timer,
  type MonoTypeOperatorFunction,
  type Observable,
} from 'rxjs';
import { abortable } from '../agent';
import type { Env } from '../core/env';
import { permanentError, toEffectError, type EffectError } from '../core/errors';
import { retryPolicyOf, type AppConfig } from '../core/flags/app-config';
import { selectionFromEnv } from '../core/selection-env';
import { retryDelay, type RetryPolicy } from '../core/retry-policy';
import { parseStorageUri, redactUri } from '../core/storage-uri';
import type { DownloadProgress, DownloadRequest } from '../ports';
import { initializerStorage, type InitializerStorage } from '../wiring';
import { exit, settingsInvalid, type Output } from './modes';
import { packageVersion } from './package-version';

/** One `<uri> <dest>` pair of the command line. */
export interface DownloadPair {
  readonly uri: string;
  readonly dest: string;
}

/** How every pair is downloaded: the retries (the loader's), and what each download is asked (KServe's patterns). */
interface PairOptions {
  readonly policy: RetryPolicy;
  readonly request: DownloadRequest;
}

/** A pair as every log line shows it: the URI without its user info, query and fragment (presigned, SAS). */
const shown = (pair: DownloadPair): { readonly storageUri: string; readonly dest: string } => ({
  storageUri: redactUri(pair.uri),
  dest: pair.dest,
});

/**
 * A git repository's URL (`https://host/org/repo.git`): KServe's initializer clones it (kserve_storage.py
 * `_download_git_repo`). As a plain GET a forge answers the repo's HTML page, which would land as the model.
 */
const gitRepository = /^https?:\/\/[^/?#]+\/[^?#]*\.git\/?(?:[?#].*)?$/is;

/** Why no provider can take `uri` (no scheme, one the router does not serve, a git repository), in the router's words. */
const unserved = (uri: string, schemes: ReadonlyArray<string>): EffectError | undefined => {
  const parsed = parseStorageUri(uri);
  if (E.isLeft(parsed)) return permanentError('invalid-uri', parsed.left);
  if (gitRepository.test(uri)) {
    const message = `${redactUri(uri)} is a git repository, which KServe's initializer clones and modelsync does not serve`;
    return permanentError('unsupported-scheme', message);
  }
  if (schemes.includes(parsed.right.scheme)) return undefined;
  const message = `protocol not supported for storageUri ${redactUri(uri)}; supported: ${schemes.join(', ')}`;
  return permanentError('unsupported-scheme', message);
};

/** The one error line of a failed run: the URI (redacted) and the dest, the failure's kind and message. */
const logFailure = (log: Logger, pair: DownloadPair, cause: unknown): void => {
  const error = toEffectError(cause);
  const { storageUri, dest } = shown(pair);
  log.error(
    { storageUri, dest, errorKind: error.kind, reason: error.message },
    `cannot download ${storageUri} to ${dest}: ${error.kind}: ${error.message}`,
  );
};

/**
 * Retries a transient failure (`EffectError.retryable`) as the loader does: up to `maxAttempts` attempts in all,
 * each after `retryDelay`; a permanent one, or the last, goes on as the error. Each attempt starts afresh.
 */
const retryTransient =
  <T>(policy: RetryPolicy, log: Logger, pair: DownloadPair): MonoTypeOperatorFunction<T> =>
  (attempt$) =>
    attempt$.pipe(
      retry({
        count: policy.maxAttempts - 1,
        delay: (cause: unknown, attempt: number) => {
          const error = toEffectError(cause);
          if (!error.retryable) return throwError(() => cause);
          const retryInMs = retryDelay(policy, attempt);
          const failure = { errorKind: error.kind, reason: error.message, attempt, retryInMs };
          log.warn({ ...shown(pair), ...failure }, 'download failed; retrying');
          return timer(retryInMs);
        },
      }),
    );

/** Downloads one pair (retried), then logs its bytes and seconds; unsubscribing aborts the download. */
const downloadPair = (
  storage: InitializerStorage,
  pair: DownloadPair,
  { policy, request }: PairOptions,
  log: Logger,
): Observable<void> =>
  defer(() => {
    const startedAt = performance.now();
    // The agent's `download progress` line (src/loader/reconcile.ts), the pair in place of the model.
    const progress = (report: DownloadProgress): void => {
      if (!report.done)
        log.info({ ...shown(pair), ...downloadProgressFields(report) }, downloadProgressMessage);
    };
    const attempt$ = abortable((signal) => storage.download(pair.uri, pair.dest, signal, progress, request));
    return attempt$.pipe(
      retryTransient(policy, log, pair),
      map(({ bytes }) => {
        const seconds = Math.round(performance.now() - startedAt) / 1000;
        log.info({ ...shown(pair), bytes, seconds }, 'model downloaded');
      }),
    );
  });

/** The pair being downloaded, if one is: what a stop signal names. */
interface InProgress {
  current: DownloadPair | undefined;
}

/** The one error line of a run a stop signal ended: the signal, and the pair it cut (redacted), if one. */
const logStopped = (log: Logger, signal: string, pair: DownloadPair | undefined): void => {
  if (pair === undefined) {
    log.error(
      { signal },
      `storage initializer stopped by ${signal} before every pair was downloaded; exiting as failed`,
    );
    return;
  }
  const { storageUri, dest } = shown(pair);
  log.error(
    { signal, storageUri, dest },
    `storage initializer stopped by ${signal} while downloading ${storageUri} to ${dest}; exiting as failed`,
  );
};

/** Each pair in order, stopping at the first that fails (logged): true when every one was downloaded. */
const downloadAll = (
  storage: InitializerStorage,
  pairs: ReadonlyArray<DownloadPair>,
  options: PairOptions,
  log: Logger,
  inProgress: InProgress,
): Observable<boolean> => {
  // Checked before any pair is downloaded: a URI no provider serves writes nothing anywhere.
  const refused = pairs
    .map((pair) => ({ pair, error: unserved(pair.uri, storage.schemes) }))
    .find(({ error }) => error !== undefined);
  if (refused !== undefined) {
    logFailure(log, refused.pair, refused.error);
    return of(false);
  }
  return from(pairs).pipe(
    concatMap((pair) =>
      defer(() => {
        inProgress.current = pair;
        return downloadPair(storage, pair, options, log);
      }).pipe(
        map(() => true),
        catchError((cause: unknown) => {
          logFailure(log, pair, cause);
          return of(false);
        }),
        finalize(() => (inProgress.current = undefined)),
      ),
    ),
    every((downloaded) => downloaded),
  );
};

/**
 * Downloads every pair in order into its dest with the agent's router, caps, credentials (`env`) and retries, as
 * docs/storage.md ("Storage initializer") says: KServe's patterns, the log lines, exit 0, 1 or 2. Unsubscribing
 * aborts the download in progress, whose staging dir is then removed: dest stays as it was; so does `stop$` (the
 * name of a stop signal), then one error line names it and the pair it cut, and the exit is 1.
 */
export const initializerMode = (
  pairs: ReadonlyArray<DownloadPair>,
  config: AppConfig,
  log: Logger,
  env: Env,
  stop$: Observable<string> = NEVER,
): Observable<Output> =>
  defer(() => {
    const select = selectionFromEnv(env);
    if (E.isLeft(select)) return settingsInvalid(log, select.left);
    // Built per subscription: its connections are closed when the run ends.
    const storage = initializerStorage(config, log, env);
    if (E.isLeft(storage)) return settingsInvalid(log, storage.left);
    const request = select.right === undefined ? {} : { select: select.right };
    log.info(
      { version: packageVersion, pairs: pairs.map(shown), ...request },
      'storage initializer starting',
    );
    const inProgress: InProgress = { current: undefined };
    const options = { policy: retryPolicyOf(config), request };
    const run$ = downloadAll(storage.right, pairs, options, log, inProgress).pipe(
      map((downloaded) => exit(downloaded ? 0 : 1)),
      finalize(() => void storage.right.close().catch(() => undefined)),
    );
    // The pair the signal cut, taken as it comes: the download is then cut (its staging dir removed), and the line
    // says what the signal stopped.
    const signal$ = stop$.pipe(
      take(1),
      map((signal) => ({ signal, pair: inProgress.current })),
      share(),
    );
    const stopped$ = signal$.pipe(
      map(({ signal, pair }) => {
        logStopped(log, signal, pair);
        return exit(1);
      }),
    );
    return merge(run$.pipe(takeUntil(signal$)), stopped$).pipe(take(1));
  });
