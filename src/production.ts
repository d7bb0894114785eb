/** Production wiring: the real edges (capabilities) and the agent settings an AppConfig asks for. */
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import type { AppConfig } from './core/app-config';
import { parseHostHeaders } from './core/storage-uri';
import { configDirSource } from './edge/config-dir';
import { downloadLimitsOf, type DownloadLimits } from './edge/download-limits';
import { loadJournal } from './edge/load-journal';
import { modelDirStore } from './edge/model-dir';
import { networkFrom, readCaBundle, type Network } from './edge/net';
import { s3Storage } from './edge/object-store/s3';
import { s3Credentials } from './edge/object-store/s3-credentials';
import { s3SettingsFrom } from './edge/object-store/s3-settings';
import { torchServeModelServer } from './edge/model-server-torchserve';
import { v2ModelServer } from './edge/model-server-v2';
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
  env: Readonly<Record<string, string | undefined>>,
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
 * The S3 provider (issue #8): our `--s3-*` flags, else KServe's environment names; credentials from `env` or the
 * AWS default chain; connections through `network` (proxies, CAs), with `AWS_CA_BUNDLE` added to `extraCa` (the
 * `--ca-bundle` certificates) and `S3_VERIFY_SSL=0` honoured for S3 alone. The Left names the setting that is wrong.
 */
const s3StorageFor = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
  limits: DownloadLimits,
  network: Network,
  extraCa: ReadonlyArray<string> = [],
): E.Either<string, StorageProvider> => {
  const settings = s3SettingsFrom(config, env);
  if (E.isLeft(settings)) return settings;
  const { caBundle, verifyTls, endpoint } = settings.right;
  const s3Ca = caBundle === undefined ? E.right([]) : readCaBundle(caBundle);
  if (E.isLeft(s3Ca)) return E.left(`AWS_CA_BUNDLE: ${s3Ca.left}`);
  if (!verifyTls)
    log.warn({ component: 'storage' }, 'S3_VERIFY_SSL is off: S3 server certificates are not checked');
  const s3Network =
    s3Ca.right.length > 0 || !verifyTls
      ? network.withTls({ extraCa: [...extraCa, ...s3Ca.right], verify: verifyTls })
      : network;
  return E.right(
    s3Storage({
      ...settings.right,
      credentials: s3Credentials(settings.right, env),
      // At a custom endpoint, its own agent (direct or through its proxy); at AWS, one that decides per bucket host.
      agent: endpoint === undefined ? s3Network.agent : s3Network.agentFor(new URL(endpoint)),
      connectTimeoutMs: config.requestTimeoutMs,
      idleTimeoutMs: config.requestTimeoutMs,
      concurrency: config.storageConcurrency,
      limits,
    }),
  );
};

/**
 * The real edges for `config`: the model dir and its load journal, the model server client, every storage
 * provider behind one download function, and the config dir. `env` supplies KServe's per-host download headers
 * (`<host>-headers`) and the S3 settings and credentials KServe reads from the environment (see s3SettingsFrom);
 * a malformed one is the Left, named but never quoted (its value may be a secret). Building them starts nothing: the agent does, when subscribed.
 */
export const capabilities = (
  config: AppConfig,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
): E.Either<string, AgentCapabilities> => {
  const headers = parseHostHeaders(env);
  if (E.isLeft(headers)) return E.left(`invalid download headers: ${headers.left}`);
  const limits = downloadLimitsOf(config);
  // One Network for every client (the http helper's wiring adds `--ca-bundle` here and shares it).
  const network = networkFrom({}, env);
  if (E.isLeft(network)) return E.left(`invalid proxy settings: ${network.left}`);
  const s3 = s3StorageFor(config, log, env, limits, network.right);
  if (E.isLeft(s3)) return E.left(`invalid S3 settings: ${s3.left}`);
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
        s3.right,
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
