/** Production wiring: the real edges (capabilities) and the agent settings an AppConfig asks for. */
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import type { AppConfig } from './core/app-config';
import { parseHostHeaders } from './core/storage-uri';
import { configDirSource } from './edge/config-dir';
import { downloadLimitsOf, type DownloadLimits } from './edge/download-limits';
import { loadJournal } from './edge/load-journal';
import { modelDirStore } from './edge/model-dir';
import { torchServeModelServer } from './edge/model-server-torchserve';
import { v2ModelServer } from './edge/model-server-v2';
import { networkFrom, type Network } from './edge/net';
import {
  azureBlobStorage,
  azureCredentialsFromEnv,
  type AzureBlobStorage,
  type AzureTokenCredential,
} from './edge/object-store/azure-blob';
import { gcsStorage } from './edge/object-store/gcs';
import { httpStorage } from './edge/storage-http';
import { localFileStorage } from './edge/storage-local';
import { routeStorage } from './loader/storage-router';
import type { ConfigSource, ModelServer, StorageProvider } from './ports';
import type { AgentCapabilities, AgentSettings } from './start-agent';

/** The config dir of `config` as a ConfigSource (also what `--dry-run` reads). */
export const configSourceFor = (config: AppConfig, log: Logger): ConfigSource =>
  configDirSource({
    dir: config.configDir,
    log: log.child({ component: 'config' }),
    pollMs: config.watchPollMs,
    maxBytes: config.maxConfigBytes,
  });

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

type Env = Readonly<Record<string, string | undefined>>;

/** DefaultAzureCredential, its library loaded when the first token is asked for (most processes never ask). */
const defaultAzureCredential = (): AzureTokenCredential => {
  let credential: Promise<AzureTokenCredential> | undefined;
  return {
    getToken: async (scopes, options) => {
      credential ??= import('@azure/identity').then((identity) => new identity.DefaultAzureCredential());
      return (await credential).getToken(scopes, options);
    },
  };
};

/**
 * The Azure Blob and GCS providers (issue #8): credentials from KServe's and the SDKs' environment names, every
 * secret among them registered before any request; connections through `network` (proxies, CAs).
 */
const azureAndGcsStorage = (
  config: AppConfig,
  env: Env,
  limits: DownloadLimits,
  network: Network,
): { readonly azure: AzureBlobStorage; readonly gcs: StorageProvider } => ({
  azure: azureBlobStorage({
    limits,
    timeoutMs: config.requestTimeoutMs,
    endpoints: config.azureBlobEndpoint === undefined ? [] : [config.azureBlobEndpoint],
    credentials: azureCredentialsFromEnv(env, defaultAzureCredential),
    agentFor: (url) => network.agentFor(url),
  }),
  gcs: gcsStorage({
    limits,
    timeoutMs: config.requestTimeoutMs,
    ...(config.gcsEndpoint !== undefined ? { endpoint: config.gcsEndpoint } : {}),
    ...(env.GOOGLE_APPLICATION_CREDENTIALS ? { credentialsFile: env.GOOGLE_APPLICATION_CREDENTIALS } : {}),
    proxyFor: (url) => network.proxyFor(url),
  }),
});

/**
 * The real edges for `config`: the model dir and its load journal, the model server client, every storage
 * provider behind one download function, and the config dir. `env` supplies KServe's per-host download headers
 * (`<host>-headers`); a malformed one is the Left, named but never quoted (its value is a secret).
 * Building them starts nothing: the agent does, when subscribed.
 */
export const capabilities = (
  config: AppConfig,
  log: Logger,
  env: Env,
): E.Either<string, AgentCapabilities> => {
  const headers = parseHostHeaders(env);
  if (E.isLeft(headers)) return E.left(`invalid download headers: ${headers.left}`);
  const limits = downloadLimitsOf(config);
  // One Network for every client (the http helper's wiring adds `--ca-bundle` here and shares it).
  const network = networkFrom({}, env);
  if (E.isLeft(network)) return E.left(`invalid proxy settings: ${network.left}`);
  const cloud = azureAndGcsStorage(config, env, limits, network.right);
  return E.right({
    configSource: configSourceFor(config, log),
    store: modelDirStore({ root: config.modelDir, log: log.child({ component: 'model-dir' }) }),
    journal: loadJournal({ root: config.modelDir, log }),
    server: modelServerFor(config),
    download: routeStorage(
      [
        localFileStorage({ roots: config.localStorageRoots, limits }),
        httpStorage({
          headersByHost: headers.right,
          connectTimeoutMs: config.requestTimeoutMs,
          idleTimeoutMs: config.requestTimeoutMs,
          limits,
        }),
        cloud.gcs,
      ],
      [cloud.azure],
    ),
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
