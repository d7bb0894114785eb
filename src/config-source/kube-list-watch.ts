/** runListWatch: the client's ListWatch of one ConfigMap, kept running: restarts with backoff, a stall timer. */
import type { Env } from '../core/env';
import type { KubeConfig, ListWatch, V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { backoffDelay } from '../core/backoff';
import {
  configMapSelector,
  configMapsPath,
  describeKubeFailure,
  stallMsFor,
  type ConfigMapObject,
} from '../core/config-map';
import {
  defaultNamespace,
  kubeClient,
  kubeFailureOf,
  loadKubeConfig,
  type KubeClientModule,
} from './kube-client';
import { bookmarkingWatch } from './kube-watch';

/**
 * Environment variables by name, as `process.env` holds them. Declared here, not in kube-client.ts, so the
 * declarations a consumer of the package compiles never reach the client's own (ESM) types.
 */

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
  /** Backoff of re-establishing a failed list or watch: full jitter from `baseMs`, capped at `maxMs`. */
  readonly retry: { readonly baseMs: number; readonly maxMs: number };
  /** The service account mount (tests point it elsewhere). */
  readonly serviceAccountDir?: string;
}

/** What the running watch reports. */
export interface WatchHooks {
  content(configMap: ConfigMapObject | undefined): void;
  failed(reason: string): void;
  alive(): void;
  version(resourceVersion: string): void;
  relisted(): void;
  rewatched(): void;
  /** A list or watch is being (re-)established: the watch's machinery acts, even while the server does not answer. */
  attempting(): void;
}

/**
 * Runs a ListWatch of the ConfigMap `options.name` until the returned teardown (the namespace, when not given, is
 * resolved into `ref` on the first start): re-establishes it after a failure (same ListWatch, so from its
 * saved version; a fresh KubeConfig, so a rotated token is read) and after a stall (a new ListWatch: re-list).
 */
export const runListWatch = (
  options: ListWatchOptions,
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
    hooks.attempting();
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
