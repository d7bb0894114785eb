/** kubeApiSource: one ConfigMap watched through the API server (list + watch) as a ConfigSource. */
import type { KubeConfig, ListWatch, V1ConfigMap } from '@kubernetes/client-node';
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import { defer, first, map, Observable, of, ReplaySubject, share } from 'rxjs';
import { backoffDelay } from '../core/backoff';
import { configFileName } from '../core/config-files';
import {
  configMapLabel,
  configMapSelector,
  configMapsPath,
  configMapText,
  describeKubeFailure,
  stallMsFor,
  type ConfigMapObject,
  type ConfigMapRef,
} from '../core/config-map';
import { readFailed } from '../core/errors';
import type { ConfigRead, ConfigSource, FsEvent } from '../ports';
import { bookmarkingWatch } from './kube-watch';
import {
  defaultNamespace,
  kubeClient,
  kubeFailureOf,
  loadKubeConfig,
  type KubeClientModule,
  type KubeEnv,
} from './kube-client';

/** Which ConfigMap to watch, how, and whom to tell that the watch is alive. */
export interface KubeApiSourceOptions {
  readonly name: string;
  /** Default: the pod's namespace (see `defaultNamespace`). */
  readonly namespace?: string;
  /** The key holding the model list (`--configmap-key`). */
  readonly key: string;
  /** `KUBECONFIG`, `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`. */
  readonly env: KubeEnv;
  readonly log: Logger;
  /** A bigger value is refused (`--max-config-bytes`). */
  readonly maxBytes: number;
  /** The server ends each watch after this long (`--watch-timeout-s`); see `stallMsFor`. */
  readonly watchTimeoutSeconds: number;
  /** Backoff of re-establishing a failed list or watch: full jitter from `baseMs`, capped at `maxMs`. */
  readonly retry: { readonly baseMs: number; readonly maxMs: number };
  /** Called on every sign of a working watch: a list answered, a watch opened, any event (bookmarks too). */
  readonly onAlive?: () => void;
  /** The service account mount (tests point it elsewhere). */
  readonly serviceAccountDir?: string;
}

/** How the watch is doing, for `/healthz`, `/status` and metrics. */
export interface KubeWatchStatus {
  readonly source: 'kube-api';
  /** `<namespace>/<name>` once the namespace is known. */
  readonly configMap: string;
  /** `Date.now()` of the last sign of a working watch (see `onAlive`); absent before the first one. */
  readonly lastAliveAt?: number;
  /** The resourceVersion of the ConfigMap whose content the pipeline last read (accepted or rejected after). */
  readonly lastReadResourceVersion?: string;
  /** The newest resourceVersion the list or watch reported (bookmarks included). */
  readonly lastSeenResourceVersion?: string;
  /** Watch requests after the first: reconnects after a clean end, an error or a stall. */
  readonly watchRestarts: number;
  /** Lists after the first: after a `410 Gone` or a stall. */
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

/** What the watch has learnt: nothing yet, that it cannot list (before any success), or the ConfigMap's content. */
type Fetched =
  | { readonly _tag: 'Pending' }
  | { readonly _tag: 'Failed'; readonly reason: string }
  | { readonly _tag: 'Fetched'; readonly configMap: ConfigMapObject | undefined };

const changed: FsEvent = { event: 'change', name: configFileName };

/**
 * The ConfigMap `name` as a ConfigSource. One ListWatch (a `metadata.name` field selector on list and watch,
 * bookmarks asked for) per subscription, shared by `events$` and `read`; `read` on its own (`--dry-run --once`)
 * lists once and stops. Each version is read as its key's text; the pipeline derives changes from that content,
 * never from event types. A missing key or ConfigMap reads as a missing file does. Failures are logged and the
 * watch re-established after a capped backoff (the client stops for good otherwise), from the last version; a
 * watch without progress for `stallMsFor(timeout)` is dropped and started over. Before the first list has
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
  const seen: { lastAliveAt?: number; read?: string; latest?: string; failure?: string } = {};
  let fetched: Fetched = { _tag: 'Pending' };

  const state$ = new Observable<Fetched>((subscriber) => {
    const publish = (next: Fetched): void => subscriber.next((fetched = next));
    return runWatch(options, ref, {
      content: (configMap) => publish({ _tag: 'Fetched', configMap }),
      failed: (reason) => {
        counters.failures += 1;
        seen.failure = reason;
        if (fetched._tag !== 'Fetched') publish({ _tag: 'Failed', reason });
      },
      alive: () => {
        seen.lastAliveAt = Date.now();
        delete seen.failure;
        options.onAlive?.();
      },
      version: (resourceVersion) => (seen.latest = resourceVersion),
      relisted: () => (counters.relists += 1),
      rewatched: () => (counters.watchRestarts += 1),
    });
  }).pipe(share({ connector: () => new ReplaySubject<Fetched>(1), resetOnRefCountZero: true }));

  const toRead = (state: Exclude<Fetched, { _tag: 'Pending' }>): ConfigRead => {
    const file = configMapLabel(refOf());
    if (state._tag === 'Failed') return E.left(readFailed(file, 'EKUBEAPI', state.reason));
    seen.read = state.configMap?.metadata?.resourceVersion;
    return E.map((text: string) => ({ file, text }))(
      configMapText(refOf(), state.configMap, options.maxBytes),
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
      source: 'kube-api',
      configMap: `${ref.namespace ?? '?'}/${options.name}`,
      ...(seen.lastAliveAt !== undefined ? { lastAliveAt: seen.lastAliveAt } : {}),
      ...(seen.read !== undefined ? { lastReadResourceVersion: seen.read } : {}),
      ...(seen.latest !== undefined ? { lastSeenResourceVersion: seen.latest } : {}),
      ...counters,
      ...(seen.failure !== undefined ? { lastFailure: seen.failure } : {}),
    }),
  };
};

/** What one run of the watch reports. */
interface WatchHooks {
  content(configMap: ConfigMapObject | undefined): void;
  failed(reason: string): void;
  alive(): void;
  version(resourceVersion: string): void;
  relisted(): void;
  rewatched(): void;
}

/**
 * Runs the ListWatch until the returned teardown: re-establishes it after a failure (same ListWatch, so from its
 * saved version; a fresh KubeConfig, so a rotated token is read) and after a stall (a new ListWatch: re-list).
 */
const runWatch = (
  options: KubeApiSourceOptions,
  ref: { namespace: string | undefined },
  hooks: WatchHooks,
): (() => void) => {
  const { log } = options;
  const stallMs = stallMsFor(options.watchTimeoutSeconds);
  let stopped = false;
  let current: ListWatch<V1ConfigMap> | undefined;
  let attempt = 0;
  let lists = 0;
  let watches = 0;
  let config: KubeConfig | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let stallTimer: NodeJS.Timeout | undefined;

  const armStall = (): void => {
    clearTimeout(stallTimer);
    stallTimer = setTimeout(() => {
      log.warn({ stallMs }, 'ConfigMap watch made no progress; re-establishing it');
      clearTimeout(retryTimer);
      drop();
      void begin(undefined);
    }, stallMs);
  };
  const alive = (): void => {
    attempt = 0;
    armStall();
    hooks.alive();
  };
  const drop = (): void => {
    const old = current;
    current = undefined;
    void old?.stop();
  };

  /** Logs `cause` and starts `again` (or, without it, a new ListWatch) after the backoff. */
  const failed = (cause: unknown, again: ListWatch<V1ConfigMap> | undefined): void => {
    if (stopped) return;
    const reason = describeKubeFailure(kubeFailureOf(cause));
    attempt += 1;
    const retryInMs = backoffDelay(attempt, options.retry.baseMs, options.retry.maxMs, Math.random);
    log.warn({ reason, attempt, retryInMs }, 'ConfigMap list or watch failed; retrying');
    hooks.failed(reason);
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => void begin(again), retryInMs);
  };

  /** Starts `round` again (after a failure: from its saved version), or a new ListWatch (a list first). */
  const begin = async (round: ListWatch<V1ConfigMap> | undefined): Promise<void> => {
    if (stopped) return;
    armStall();
    let lw = round;
    try {
      const kube = await kubeClient();
      config = loadKubeConfig(kube, options.env, options.serviceAccountDir);
      ref.namespace ??= defaultNamespace(config, options.serviceAccountDir);
      if (stopped) return;
      lw ??= newListWatch(kube, ref.namespace);
      current = lw;
      await lw.start();
    } catch (cause) {
      // A ListWatch passes its failures to 'error'; what throws here is the client, the settings or a bug.
      if (lw === undefined || lw === current) failed(cause, lw);
    }
  };

  const newListWatch = (kube: KubeClientModule, namespace: string): ListWatch<V1ConfigMap> => {
    const selector = configMapSelector(options.name);
    const isCurrent = (): boolean => !stopped && lw === current;
    const listFn = async () => {
      const list = await config!
        .makeApiClient(kube.CoreV1Api)
        .listNamespacedConfigMap({ namespace, fieldSelector: selector });
      if (!isCurrent()) return list;
      if (lists++ > 0) hooks.relisted();
      alive();
      if (list.metadata?.resourceVersion !== undefined) hooks.version(list.metadata.resourceVersion);
      hooks.content(list.items.find((item) => item.metadata?.name === options.name));
      return list;
    };
    const watch = bookmarkingWatch(kube, () => config!, options.watchTimeoutSeconds, {
      opened: () => {
        if (!isCurrent()) return;
        if (watches++ > 0) hooks.rewatched();
        alive();
      },
      event: (resourceVersion) => {
        if (!isCurrent()) return;
        alive();
        if (resourceVersion !== undefined) hooks.version(resourceVersion);
      },
    });
    const lw: ListWatch<V1ConfigMap> = new kube.ListWatch(
      configMapsPath(namespace),
      watch,
      listFn,
      false,
      undefined,
      selector,
    );
    const changedNow = (): void => {
      if (isCurrent()) hooks.content(lw.get(options.name, namespace));
    };
    lw.on('add', changedNow);
    lw.on('update', changedNow);
    lw.on('delete', changedNow);
    lw.on('error', (cause: unknown) => {
      if (isCurrent()) failed(cause, lw);
    });
    return lw;
  };

  void begin(undefined);
  return () => {
    stopped = true;
    clearTimeout(retryTimer);
    clearTimeout(stallTimer);
    drop();
  };
};
