/**
 * kubeApiSource: one ConfigMap watched through the API server (list + watch) as a ConfigSource; kubeWatchProblem:
 * whether that watch is stuck (liveness), as opposed to quiet or cut off from the server.
 */
import * as E from 'fp-ts/Either';
import { defer, first, map, Observable, of, ReplaySubject, share } from 'rxjs';
import { configFileName } from '../core/config-files';
import {
  configMapLabel,
  configMapText,
  stallMsFor,
  type ConfigMapObject,
  type ConfigMapRef,
} from '../core/config-map';
import { readFailed } from '../core/errors';
import type { ConfigRead, ConfigSource, FsEvent } from '../ports';
import type { ConfigDirStatus } from './config-dir';
import type { ConfigReadOptions } from './config-file';
import { runListWatch, type ListWatchOptions } from './kube-list-watch';

/** Which ConfigMap to watch, how, and whom to tell that the watch is alive. */
export interface KubeApiSourceOptions extends ListWatchOptions, Pick<ConfigReadOptions, 'maxBytesName'> {
  /** The key holding the model list. */
  readonly key: string;
  /** A bigger value is refused. */
  readonly maxBytes: number;
  /** Called on every sign of a working watch: a list answered, a watch opened, any event (bookmarks too). */
  readonly onAlive?: () => void;
  /** Runs the list and watch (default `runListWatch`); tests give a fake that calls the hooks. */
  readonly runWatch?: typeof runListWatch;
}

/** How the watch is doing, for `/healthz`, `/status` and metrics. */
export interface KubeWatchStatus {
  readonly source: 'kube-api';
  /** `<namespace>/<name>` once the namespace is known. */
  readonly configMap: string;
  /**
   * `performance.now()` (as every time here: a clock that never steps, so a wall clock set forward is no stuck watch)
   * of the last sign of a working watch (see `onAlive`); absent before the first one.
   */
  readonly lastAliveAt?: number;
  /** `performance.now()` of the watch machinery's last act (sign of life, failure, retry): only a stuck process stops. */
  readonly lastActivityAt?: number;
  /** `performance.now()` of the first failure since the last sign of a working watch: the API server is unreachable. */
  readonly unreachableSince?: number;
  /** `performance.now()` since when a ConfigMap version the watch delivered waits for the pipeline to read it. */
  readonly unreadSince?: number;
  /** How long a healthy watch may go without a sign (`stallMsFor(--watch-timeout-s)`), then is re-established. */
  readonly stallMs: number;
  /** The resourceVersion of the ConfigMap whose content the pipeline last read (accepted or rejected after). */
  readonly lastReadResourceVersion?: string;
  /** The newest resourceVersion the list or watch reported (bookmarks included). */
  readonly lastSeenResourceVersion?: string;
  /** Watch requests after the first: reconnects after a clean end, an error or a stall. */
  readonly watchRestarts: number;
  /** Lists after the first: after a failure a resume would repeat (`410 Gone`, a broken event) or a stall. */
  readonly relists: number;
  /** Failed lists and watches so far. */
  readonly failures: number;
  /** The last failure in words (never a token), until the next sign of a working watch. */
  readonly lastFailure?: string;
}

/** A ConfigSource over the API server, with the state of its watch. */
export interface KubeApiSource extends ConfigSource {
  /** A snapshot of the watch's state. */
  status(): KubeWatchStatus;
}

/** What /healthz, /status and the metrics read of the config source in force (`source` tells which it is). */
export type SourceStatus = ConfigDirStatus | KubeWatchStatus;

/**
 * Why the process's watch of the ConfigMap is stuck, or undefined while it works. Silence from the API server is
 * not stuck: a quiet watch gets no event between bookmarks, and during an outage the watch keeps retrying (which
 * `/status` and readiness report). Stuck is what restarting the process would cure: a version the watch delivered
 * that the pipeline never reads within `graceMs`, or the watch's own machinery idle for longer than its
 * re-establishing deadline (`status.stallMs`: past it the source re-lists by itself) plus `graceMs`.
 */
export const kubeWatchProblem = (
  status: KubeWatchStatus,
  now: number,
  graceMs: number,
): string | undefined => {
  if (status.unreadSince !== undefined && now - status.unreadSince > graceMs)
    return `the ConfigMap version the watch delivered ${Math.round(now - status.unreadSince)} ms ago has not been read`;
  if (status.lastActivityAt !== undefined && now - status.lastActivityAt > status.stallMs + graceMs)
    return `the ConfigMap watch has done nothing for ${Math.round(now - status.lastActivityAt)} ms (it re-establishes itself after ${status.stallMs} ms without progress)`;
  return undefined;
};

/**
 * What the watch has learnt: nothing yet, that it cannot list (before any success), the ConfigMap's content, or
 * that its current version cannot be read (`reason`: its answer is over the cap).
 */
type Fetched =
  | { readonly _tag: 'Pending' }
  | { readonly _tag: 'Failed'; readonly reason: string }
  | { readonly _tag: 'Fetched'; readonly configMap: ConfigMapObject | undefined }
  | { readonly _tag: 'Refused'; readonly reason: string };

const changed: FsEvent = { event: 'change', name: configFileName };

/**
 * The ConfigMap `name` as a ConfigSource: one ListWatch (runListWatch) per subscription, shared by `events$` and
 * `read`; `read` alone (`--dry-run --once`) lists once and stops. Each version is read as its key's text (the
 * pipeline derives changes from content, never from event types); a missing key or ConfigMap reads as a missing
 * file, a version too big to read as a failed read (`EFBIG`, once while it lasts). Before the first list has
 * succeeded, a read waits for it, or reports why it failed.
 */
export const kubeApiSource = (options: KubeApiSourceOptions): KubeApiSource => {
  const ref: { namespace: string | undefined } = { namespace: options.namespace };
  const refOf = (): ConfigMapRef => ({
    namespace: ref.namespace ?? '?',
    name: options.name,
    key: options.key,
  });
  const counters = { watchRestarts: 0, relists: 0, failures: 0 };
  // The status's optional fields, each present only while it holds a value (deleted, never set to undefined).
  const seen: { -readonly [K in keyof KubeWatchStatus]?: KubeWatchStatus[K] } = {};
  const acted = (): void => void (seen.lastActivityAt = performance.now());
  let fetched: Fetched = { _tag: 'Pending' };

  const state$ = new Observable<Fetched>((subscriber) => {
    const publish = (next: Fetched): void => subscriber.next((fetched = next));
    return (options.runWatch ?? runListWatch)(options, ref, {
      content: (configMap) => {
        seen.unreadSince ??= performance.now();
        publish({ _tag: 'Fetched', configMap });
      },
      // Retried with backoff while it lasts: published once, so the pipeline reads (and warns) once.
      refused: (reason) => {
        if (fetched._tag === 'Refused' && fetched.reason === reason) return;
        seen.unreadSince ??= performance.now();
        publish({ _tag: 'Refused', reason });
      },
      failed: (reason) => {
        acted();
        seen.unreachableSince ??= performance.now();
        counters.failures += 1;
        seen.lastFailure = reason;
        if (fetched._tag === 'Pending' || fetched._tag === 'Failed') publish({ _tag: 'Failed', reason });
      },
      alive: () => {
        seen.lastAliveAt = performance.now();
        acted();
        delete seen.unreachableSince;
        delete seen.lastFailure;
        options.onAlive?.();
      },
      version: (resourceVersion) => (seen.lastSeenResourceVersion = resourceVersion),
      relisted: () => (counters.relists += 1),
      rewatched: () => (counters.watchRestarts += 1),
      attempting: acted,
    });
  }).pipe(share({ connector: () => new ReplaySubject<Fetched>(1), resetOnRefCountZero: true }));

  const toRead = (state: Exclude<Fetched, { _tag: 'Pending' }>): ConfigRead => {
    const file = configMapLabel(refOf());
    if (state._tag === 'Failed') return E.left(readFailed(file, 'EKUBEAPI', state.reason));
    if (state._tag === 'Refused') {
      delete seen.unreadSince;
      return E.left(readFailed(file, 'EFBIG', state.reason));
    }
    // The object is checked, not trusted (configMapText): a resourceVersion of another type is no version.
    const resourceVersion: unknown = state.configMap?.metadata?.resourceVersion;
    if (typeof resourceVersion === 'string') seen.lastReadResourceVersion = resourceVersion;
    else delete seen.lastReadResourceVersion;
    delete seen.unreadSince;
    return E.map((text: string) => ({ file, text }))(
      configMapText(refOf(), state.configMap, {
        maxBytes: options.maxBytes,
        limit: options.maxBytesName ?? 'maxBytes',
      }),
    );
  };

  return {
    events$: state$.pipe(map(() => changed)),
    read: () =>
      defer(() =>
        fetched._tag === 'Pending'
          ? state$.pipe(
              first((state): state is Exclude<Fetched, { _tag: 'Pending' }> => state._tag !== 'Pending'),
            )
          : of(fetched),
      ).pipe(map(toRead)),
    status: () => ({
      ...seen,
      source: 'kube-api',
      configMap: `${ref.namespace ?? '?'}/${options.name}`,
      stallMs: stallMsFor(options.watchTimeoutSeconds),
      ...counters,
    }),
  };
};
