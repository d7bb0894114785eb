/** Production wiring: the real edges (capabilities) and the agent settings an AppConfig asks for. */
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import type { AppConfig } from './core/app-config';
import { parseHostHeaders } from './core/storage-uri';
import { configDirSource } from './edge/config-dir';
import { loadJournal } from './edge/load-journal';
import { modelDirStore } from './edge/model-dir';
import { torchServeModelServer } from './edge/model-server-torchserve';
import { v2ModelServer } from './edge/model-server-v2';
import { networkFrom, type Network } from './edge/net';
import { heartbeatMs } from './edge/surface-state';
import { routeStorage } from './loader/storage-router';
import { storageProviders } from './production-storage';
import type { ConfigSource, ModelServer, Telemetry } from './ports';
import type { AgentCapabilities, AgentSettings } from './start-agent';

/**
 * The config dir of `config` as a ConfigSource (also what `--dry-run` reads), telling `onAlive` of the watch's
 * progress; it re-checks the dir often enough for `--watch-stall-ms` to judge the watch.
 */
export const configSourceFor = (config: AppConfig, log: Logger, onAlive?: () => void): ConfigSource =>
  configDirSource({
    dir: config.configDir,
    log: log.child({ component: 'config' }),
    pollMs: config.watchPollMs,
    maxBytes: config.maxConfigBytes,
    recheckMs: heartbeatMs(config.watchStallMs),
    ...(onAlive !== undefined ? { onAlive } : {}),
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
 * `telemetry` hears of the config watch's progress. Building them starts nothing: the agent does, when subscribed.
 */
export const capabilities = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
  telemetry?: Pick<Telemetry, 'watcherAlive'>,
): E.Either<string, AgentCapabilities> => {
  const headers = parseHostHeaders(env);
  if (E.isLeft(headers)) return E.left(`invalid download headers: ${headers.left}`);
  const network = networkFrom(config, env);
  if (E.isLeft(network)) return E.left(`invalid proxy or CA bundle settings: ${network.left}`);
  const storage = storageProviders(config, log, env, network.right, headers.right);
  if (E.isLeft(storage)) return storage;
  const router = routeStorage(storage.right.providers, storage.right.claiming);
  return E.right({
    configSource: configSourceFor(config, log, telemetry?.watcherAlive),
    store: modelDirStore({ root: config.modelDir, log: log.child({ component: 'model-dir' }) }),
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
