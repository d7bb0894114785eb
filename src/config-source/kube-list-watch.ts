/** runListWatch: the client's ListWatch of one ConfigMap, kept running: restarts with backoff, a stall timer. */
import type { Env } from '../core/env';
import type { KubeConfig, ListWatch, V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { retryDelay, type RetryPolicy } from '../core/retry-policy';
import {
  configMapSelector,
  configMapsPath,
  describeKubeFailure,
  stallMsFor,
  type ConfigMapObject,
} from '../core/config-map';
import { defaultNamespace, kubeClient, loadKubeConfig, type KubeClientModule } from './kube-client';
import { ConfigMapLister } from './kube-list';
import {
  KubeAnswerTooLarge,
  kubeFailureOf,
  KubeRelistNeeded,
  KubeStatusError,
  maxKubeAnswerBytes,
} from './kube-request';
import { bookmarkingWatch } from './kube-watch';

/** Which ConfigMap to list and watch, where the API server is, and how to retry. */
export interface ListWatchOptions {
  readonly name: string;
  /** Default: the pod's namespace (see `defaultNamespace`). */
  readonly namespace?: string;
  /** `KUBECONFIG`, `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`. */
  readonly env: Env;
  readonly log: Logger;
  /** The server ends each watch after this long (`--watch-timeout-s`); see `stallMsFor`. */
  readonly watchTimeoutSeconds: number;
  /** The backoff of re-establishing a failed list or watch (its attempts are not capped: the watch never gives up). */
  readonly retry: Pick<RetryPolicy, 'baseMs' | 'maxMs'>;
  /** The service account mount (tests point it elsewhere). */
  readonly serviceAccountDir?: string;
}

/** What the running watch reports. */
export interface WatchHooks {
  content(configMap: ConfigMapObject | undefined): void;
  /** The ConfigMap's current version cannot be read, `why` (its answer is over the cap); the last content stays. */
  refused(why: string): void;
  failed(reason: string): void;
  alive(): void;
  version(resourceVersion: string): void;
  relisted(): void;
  rewatched(): void;
  /** A list or watch is being (re-)established: the watch's machinery acts, even while the server does not answer. */
  attempting(): void;
}

/** One ListWatch, and the controller that aborts its list requests. */
type Round = { readonly lw: ListWatch<V1ConfigMap>; readonly requests: AbortController };

/**
 * Why a version too big to read is refused, after the ConfigMap's name and key; `version` when the server told it.
 * The pipeline warns once per reason in a row: once per version, or once while it lasts without one.
 */
const tooLargeReason = (version: string | undefined): string =>
  `${version === undefined ? 'its answer' : `its version ${version}`} from the API server is over ` +
  `${maxKubeAnswerBytes} bytes (8 MiB, the most modelsync reads of one ConfigMap; the API server stores at most ` +
  '1 MiB of data in one); it was not read';

/**
 * Runs a ListWatch of the ConfigMap `options.name` until the returned teardown (a namespace not given is resolved
 * into `ref` at the first start). After a failure and the backoff it starts again with a fresh KubeConfig (a
 * rotated token, an edited kubeconfig): the same ListWatch, resuming from its saved version, unless a resume would
 * only repeat the failure (`KubeRelistNeeded`), the server refused it (`KubeStatusError`: a list may still be
 * allowed) or the watch stalled: then a new one, a list first. A list over the
 * cap refuses that version (`hooks.refused`) and is retried until the ConfigMap holds one that can be read.
 */
export const runListWatch = (
  options: ListWatchOptions,
  ref: { namespace: string | undefined },
  hooks: WatchHooks,
): (() => void) => {
  const { log } = options;
  const stallMs = stallMsFor(options.watchTimeoutSeconds);
  let stopped = false;
  let current: Round | undefined;
  let lists = 0;
  let watches = 0;
  let config: KubeConfig | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  const policy: RetryPolicy = { ...options.retry, maxAttempts: Infinity, jitter: 'at-least-base' };
  const backoff = { attempt: 0, lastFailureAt: -Infinity };
  // One for the whole run: it remembers, across ListWatches, the version it found too big to read.
  let lister: ConfigMapLister | undefined;

  /**
   * The wait before the next attempt (docs/operating.md, Config sources): the count starts over only after
   * `2 × maxMs` without a failure, as client-go's backoff manager does, not at a list or a watch opened.
   */
  const nextDelay = (): number => {
    const now = performance.now();
    if (now - backoff.lastFailureAt > 2 * policy.maxMs) backoff.attempt = 0;
    backoff.lastFailureAt = now;
    backoff.attempt += 1;
    return retryDelay(policy, backoff.attempt);
  };

  // A retry waiting out its backoff (longer than stallMs with --retry-max-ms above it) is no stall: it was told as
  // one at each stall window, and re-established sooner than the backoff allows. It acts still, for liveness.
  let retryPending = false;
  const stallTimer = setTimeout(() => {
    if (retryPending) {
      armStall();
      hooks.attempting();
      return;
    }
    log.warn({ stallMs }, 'ConfigMap watch made no progress; re-establishing it');
    clearTimeout(retryTimer);
    drop();
    void begin(undefined);
  }, stallMs);
  const armStall = (): void => void stallTimer.refresh();
  const alive = (): void => {
    armStall();
    hooks.alive();
  };
  const drop = (): void => {
    const old = current;
    current = undefined;
    old?.requests.abort();
    void old?.lw.stop();
  };

  /**
   * Logs `cause` and, after the backoff, resumes `again` or starts a new ListWatch. A version over the cap was
   * refused to the pipeline already (one warn line there): its retries are logged at debug.
   */
  const failed = (cause: unknown, again: ListWatch<V1ConfigMap> | undefined): void => {
    if (stopped) return;
    const reason = describeKubeFailure(kubeFailureOf(cause), config?.getCurrentCluster()?.server);
    // A refusal (a Role that lets it list but not watch, a 5xx, a 429) would meet a resume again while the server
    // answers lists: a list, as client-go's reflector sends after a failed watch, sees each edit meanwhile.
    const relist =
      again === undefined || cause instanceof KubeRelistNeeded || cause instanceof KubeStatusError;
    const retryInMs = nextDelay();
    const fields = { reason, attempt: backoff.attempt, retryInMs, then: relist ? 're-list' : 'resume' };
    if (cause instanceof KubeAnswerTooLarge) log.debug(fields, 'ConfigMap too big to read; retrying');
    else {
      log.warn(fields, 'ConfigMap list or watch failed; retrying');
      hooks.failed(reason);
    }
    clearTimeout(retryTimer);
    if (relist) drop();
    retryPending = true;
    retryTimer = setTimeout(() => {
      retryPending = false;
      void begin(relist ? undefined : again);
    }, retryInMs);
  };

  /** Starts `round` again (after a failure: from its saved version), or a new ListWatch (a list first). */
  const begin = async (round: ListWatch<V1ConfigMap> | undefined): Promise<void> => {
    if (stopped) return;
    armStall();
    hooks.attempting();
    let lw = round;
    try {
      const kube = await kubeClient();
      config = await loadKubeConfig(kube, options.env, options.serviceAccountDir);
      ref.namespace ??= await defaultNamespace(config, options.serviceAccountDir);
      if (stopped) return;
      if (lw === undefined || lw !== current?.lw) {
        drop();
        current = newListWatch(kube, ref.namespace);
        lw = current.lw;
      }
      await lw.start();
    } catch (cause) {
      // A ListWatch passes its failures to 'error'; what throws here is the client, the settings or a bug.
      if (lw === undefined || lw === current?.lw) failed(cause, lw);
    }
  };

  const newListWatch = (kube: KubeClientModule, namespace: string): Round => {
    const requests = new AbortController();
    // The server answered, with a version too big to read: refuse it (the pipeline warns once per version).
    const listing = (lister ??= new ConfigMapLister(kube, { namespace, name: options.name }, (version) => {
      if (stopped) return;
      alive();
      hooks.refused(tooLargeReason(version));
    }));
    const isCurrent = (): boolean => !stopped && lw === current?.lw;
    const listFn = async () => {
      const list = await listing.list(config!, requests.signal);
      if (!isCurrent()) return list;
      if (lists++ > 0) hooks.relisted();
      alive();
      if (list.metadata?.resourceVersion !== undefined) hooks.version(list.metadata.resourceVersion);
      hooks.content(list.items.find((item) => item.metadata?.name === options.name));
      return list;
    };
    const watched = { name: options.name, namespace, timeoutSeconds: options.watchTimeoutSeconds };
    const watch = bookmarkingWatch(kube, () => config!, watched, {
      wanted: isCurrent,
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
    const [path, selector] = [configMapsPath(namespace), configMapSelector(options.name)];
    const lw: ListWatch<V1ConfigMap> = new kube.ListWatch(path, watch, listFn, false, undefined, selector);
    for (const change of ['add', 'update', 'delete'] as const)
      lw.on(change, () => {
        if (isCurrent()) hooks.content(lw.get(options.name, namespace));
      });
    lw.on('error', (cause: unknown) => {
      if (isCurrent()) failed(cause, lw);
    });
    return { lw, requests };
  };

  void begin(undefined);
  return () => {
    stopped = true;
    clearTimeout(retryTimer);
    clearTimeout(stallTimer);
    drop();
  };
};
