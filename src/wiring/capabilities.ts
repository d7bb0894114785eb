/** Production wiring: the real edges (capabilities) and the agent settings an AppConfig asks for. */
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import type { AppConfig } from '../core/flags/app-config';
import { parseHostHeaders } from '../core/storage-uri';
import { configDirSource } from '../config-source/config-dir';
import { spaceCheck } from '../fs/free-space';
import { kubeApiSource, type KubeWatchStatus } from '../config-source/kube-api-source';
import { loadJournal } from '../model-dir/load-journal';
import { modelDirStore } from '../model-dir/store';
import { torchServeModelServer } from '../model-server/torchserve';
import { v2ModelServer } from '../model-server/v2';
import { networkFrom, type Network } from '../net/network';
import { heartbeatMs } from '../surface/surface-state';
import { routeStorage } from '../storage/router';
import { storageProviders } from './storage';
import type { ConfigSource, ModelServer } from '../ports';
import type { AgentCapabilities, AgentSettings } from '../agent/start-agent';

/** What the lead's telemetry hears from the config source: each sign of a working API-server watch. */
export interface ConfigSourceHooks {
  readonly onAlive?: () => void;
}

/** A ConfigSource; the kube-api one also tells how its watch is doing (`status`). */
export type ConfigSourceWithStatus = ConfigSource & { readonly status?: () => KubeWatchStatus };

/**
 * The config source `config` asks for (also what `--dry-run` reads): the config dir, or with `--source kube-api`
 * the ConfigMap through the API server (`env` gives `KUBECONFIG` or the in-cluster `KUBERNETES_SERVICE_*`).
 */
export const configSourceFor = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>> = {},
  hooks: ConfigSourceHooks = {},
): ConfigSourceWithStatus =>
  config.source === 'kube-api'
    ? kubeApiSource({
        name: config.configmap ?? '',
        ...(config.namespace !== undefined ? { namespace: config.namespace } : {}),
        key: config.configmapKey,
        env,
        log: log.child({ component: 'config' }),
        maxBytes: config.maxConfigBytes,
        watchTimeoutSeconds: config.watchTimeoutS,
        retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
        ...(hooks.onAlive !== undefined ? { onAlive: hooks.onAlive } : {}),
      })
    : configDirSource({
        dir: config.configDir,
        log: log.child({ component: 'config' }),
        pollMs: config.watchPollMs,
        maxBytes: config.maxConfigBytes,
        // Often enough for `--watch-stall-ms` to judge the watch.
        recheckMs: heartbeatMs(config.watchStallMs),
        ...(hooks.onAlive !== undefined ? { onAlive: hooks.onAlive } : {}),
      });

// The model server is the pod's neighbour: reached directly (never through a proxy), on kept-alive connections.
const modelServerFor = (config: AppConfig, network: Network): ModelServer =>
  config.protocol === 'torchserve'
    ? torchServeModelServer({
        baseUrl: config.serverUrl,
        timeoutMs: config.requestTimeoutMs,
        loadTimeoutMs: config.loadTimeoutMs,
        dispatcher: network.direct,
        ...(config.torchserveTokenFile !== undefined ? { tokenFile: config.torchserveTokenFile } : {}),
      })
    : v2ModelServer({
        baseUrl: config.serverUrl,
        timeoutMs: config.requestTimeoutMs,
        loadTimeoutMs: config.loadTimeoutMs,
        dispatcher: network.direct,
      });

/**
 * The real edges for `config`: the model dir and its load journal, the model server client, every storage
 * provider behind one download function, and the config dir. `env` supplies KServe's per-host download headers
 * (`<host>-headers`) and the proxy variables (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`) and the S3, Azure and GCS
 * settings and credentials (see production-storage.ts); a malformed one, or a
 * `--ca-bundle` that cannot be read, is the Left, named but never quoted (header values are secrets).
 * Building them starts nothing: the agent does, when subscribed. `sourceHooks.onAlive` hears each sign of a
 * working watch (dir or API server); with `--source kube-api` and `configSourceStatus` tells how the watch is doing (for /healthz, /status
 * and metrics).
 */
export const capabilities = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
  sourceHooks: ConfigSourceHooks = {},
): E.Either<string, AgentCapabilities & { readonly configSourceStatus?: () => KubeWatchStatus }> => {
  const headers = parseHostHeaders(env);
  if (E.isLeft(headers)) return E.left(`invalid download headers: ${headers.left}`);
  const network = networkFrom(config, env);
  if (E.isLeft(network)) return E.left(`invalid proxy or CA bundle settings: ${network.left}`);
  const storage = storageProviders(config, log, env, network.right, headers.right);
  if (E.isLeft(storage)) return storage;
  const router = routeStorage(storage.right.providers, storage.right.claiming);
  const configSource = configSourceFor(config, log, env, sourceHooks);
  return E.right({
    configSource,
    ...(configSource.status !== undefined ? { configSourceStatus: configSource.status } : {}),
    store: modelDirStore({
      root: config.modelDir,
      log, // the store binds its own `component`
      spaceCheck: spaceCheck(config.minFreeBytes),
    }),
    journal: loadJournal({ root: config.modelDir, log }),
    server: modelServerFor(config, network.right),
    download: router,
    servedSchemes: router.schemes,
  });
};

/** The agent settings `config` asks for (caps, retry policy, settle time), logging to `log`. */
export const agentSettings = (config: AppConfig, log: Logger): AgentSettings => ({
  log,
  downloadConcurrency: config.downloadConcurrency,
  loadConcurrency: config.loadConcurrency,
  retry: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs, maxAttempts: config.maxAttempts },
  settleMs: config.settleMs,
});
