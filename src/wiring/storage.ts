/** Storage wiring: every provider an AppConfig asks for (file, http(s), S3, GCS, Azure Blob, hf://) on one Network. */
import type { Env } from '../core/env';
import { kserveStorageEnv } from '../core/kserve-storage-env';
import { withRequestsCas, withSslCertFile } from './ca-trust';
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import { flagTable, retryPolicyOf, type AppConfig } from '../core/flags/app-config';
import type { RetryPolicy } from '../core/retry-policy';
import { parseHostHeaders, redactUri } from '../core/storage-uri';
import { retryableError } from '../core/errors';
import {
  type CapField,
  type DownloadLimits,
  azureBlobStorage,
  azureCredentialsFromEnv,
  type AzureTokenCredential,
  gcsStorage,
  hfSettingsFrom,
  hfStorage,
  hfTokenFileOf,
  s3Storage,
  s3Credentials,
  s3SettingsFrom,
  httpStorage,
  localFileStorage,
  pvcStorage,
  routeStorage,
  sourceWatches,
  type ClaimingProvider,
  withCheckedFiles,
} from '../storage';
import type { SpaceCheck } from '../fs';
import { createSlots, type Slots } from '../core/slots';
import { networkFrom, readCaBundle, type Network } from '../net';
import type { DownloadFunction, StorageProvider } from '../ports';

const capFields = ['maxModelBytes', 'maxArchiveRatio', 'maxArchiveEntries', 'maxModelFiles'] as const;
const pickCaps = <V>(value: (field: CapField) => V): Record<CapField, V> =>
  Object.fromEntries(capFields.map((field) => [field, value(field)])) as Record<CapField, V>;

/** The download limits `config` sets, each cap named by its flag in the failure of a download past it. */
export const downloadLimitsOf = (config: AppConfig): DownloadLimits => ({
  ...pickCaps((field) => config[field]),
  minRate: {
    bytesPerSecond: config.minDownloadRate,
    windowMs: config.minRateWindowMs,
    name: flagTable.minDownloadRate.flag,
  },
  progressIntervalMs: config.progressIntervalMs,
  names: pickCaps((field) => flagTable[field].flag),
});

/**
 * DefaultAzureCredential, its library loaded when the first token is asked for (most processes never ask); the
 * files of `env` it reads whole at each token checked first (withCheckedFiles).
 */
const defaultAzureCredential = (env: Env): AzureTokenCredential => {
  let credential: Promise<AzureTokenCredential> | undefined;
  return withCheckedFiles(env, {
    getToken: async (scopes, options) => {
      credential ??= import('@azure/identity').then((identity) => new identity.DefaultAzureCredential());
      return (await credential).getToken(scopes, options);
    },
  });
};

/**
 * The S3 provider: our `--s3-*` flags, else KServe's environment names; credentials from `env` or the AWS default
 * chain; `AWS_CA_BUNDLE` added to the `--ca-bundle` certificates and `S3_VERIFY_SSL=0` honoured for S3 alone.
 */
const s3StorageFor = (
  config: AppConfig,
  log: Logger,
  env: Env,
  limits: DownloadLimits,
  network: Network,
  streams: { readonly streams: number; readonly pool: Slots; readonly retry: RetryPolicy },
): E.Either<string, StorageProvider> => {
  const settings = s3SettingsFrom(config, env);
  if (E.isLeft(settings)) return settings;
  const { caBundle, verifyTls, endpoint } = settings.right;
  if (!verifyTls)
    log.warn({ component: 'storage' }, 'S3_VERIFY_SSL is off: S3 server certificates are not checked');
  // The chain's STS requests (IRSA) on the Network's proxy rules and CAs, not S3's TLS settings. Made now, so that
  // its secrets are registered at start, whenever the CA bundle lets S3 be built.
  const credentials = s3Credentials({ ...settings.right, agent: () => network.agent }, env);
  const s3With = (s3Ca: ReadonlyArray<string>): StorageProvider => {
    const s3Network =
      s3Ca.length > 0 || !verifyTls ? network.withTls({ extraCa: s3Ca, verify: verifyTls }) : network;
    return s3Storage({
      ...settings.right,
      credentials,
      // At a custom endpoint, its own agent (direct or through its proxy); at AWS, one that decides per bucket host.
      agent: () => (endpoint === undefined ? s3Network.agent : s3Network.agentFor(new URL(endpoint))),
      // Ranged reads of big objects by undici, each chunk written as it comes off its socket.
      dispatcherFor: (url) => s3Network.dispatcherFor(url),
      connectTimeoutMs: config.requestTimeoutMs,
      idleTimeoutMs: config.requestTimeoutMs,
      concurrency: config.storageConcurrency,
      ...streams,
      limits,
    });
  };
  // As KServe's initializer: the bundle is looked for only while certificates are checked.
  if (caBundle === undefined || !verifyTls) return E.right(s3With([]));
  const s3Ca = readCaBundle(caBundle);
  if (E.isLeft(s3Ca))
    log.warn(
      { component: 'storage' },
      `AWS_CA_BUNDLE: ${s3Ca.left}: every s3:// download fails until it can be read`,
    );
  return E.right(awaitingCaBundle(caBundle, s3With));
};

/**
 * S3 with its CA bundle, built at the first s3:// download: its connections trust Node's roots and the bundle, which
 * held as strings cost the heap ~0.6 MiB from the start (Node's 119 roots, and a bundle of as many), paid now only
 * where an s3:// model is listed. Until the bundle can be read, only S3's downloads fail, each naming the file, as
 * KServe's initializer fails them (kserve_storage.py `_get_s3_client_kwargs`); hf://, gs:// and http(s):// models
 * are not S3's. The file is read again at each download until then (retryable): a ConfigMap's key fixed later is
 * projected into the mount.
 */
const awaitingCaBundle = (
  file: string,
  s3With: (s3Ca: ReadonlyArray<string>) => StorageProvider,
): StorageProvider => {
  let s3: StorageProvider | undefined;
  return {
    schemes: ['s3'],
    download: (uri, ...rest) => {
      if (s3 === undefined) {
        const s3Ca = readCaBundle(file);
        if (E.isLeft(s3Ca))
          return Promise.reject(
            retryableError('filesystem', `${redactUri(uri)}: AWS_CA_BUNDLE: ${s3Ca.left}`),
          );
        s3 = s3With(s3Ca.right);
      }
      return s3.download(uri, ...rest);
    },
  };
};

/** Every storage provider `config` asks for: those that serve a scheme, and those that claim URIs of one. */
export interface StorageProviders {
  readonly providers: ReadonlyArray<StorageProvider>;
  readonly claiming: ReadonlyArray<ClaimingProvider>;
}

/**
 * Every storage provider `config` asks for, on `network`, with the settings and credentials of `env` (every secret
 * registered before any request; `HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_OFFLINE` as huggingface_hub reads them), a
 * declared size held to `space`. The Left names the setting that is wrong, never its value.
 */
export const storageProviders = (
  config: AppConfig,
  log: Logger,
  env: Env,
  network: Network,
  headersByHost: ReadonlyMap<string, Readonly<Record<string, string>>>,
  space?: SpaceCheck,
): E.Either<string, StorageProviders> => {
  const limits = { ...downloadLimitsOf(config), spaceCheck: space };
  // Connections per big file, and one pool for every provider: the bound on storage connections is the process's.
  // With the retry policy, which a store's push-backs follow too.
  const streams = {
    streams: config.downloadStreams,
    pool: createSlots(config.maxDownloadStreams),
    retry: retryPolicyOf(config),
  };
  const s3 = s3StorageFor(config, log, env, limits, network, streams);
  if (E.isLeft(s3)) return E.left(`invalid S3 settings: ${s3.left}`);
  const hf = hfSettingsFrom(env);
  if (E.isLeft(hf)) return E.left(`invalid Hugging Face Hub settings: ${hf.left}`);
  const { streamsPerFile, ...hub } = hf.right;
  // S3 has its own (its AWS_CA_BUNDLE, S3_VERIFY_SSL); the STS requests of its chain go on `network`.
  const trusting = withRequestsCas(network, env, log);
  const sdkOptions = {
    limits,
    timeoutMs: config.requestTimeoutMs,
    concurrency: config.storageConcurrency,
    ...streams,
  };
  // One watch a volume for both: a claim found hung fails the copies of either at once.
  const sourceWatch = sourceWatches([...config.localStorageRoots, config.pvcMountRoot], log);
  return E.right({
    providers: [
      localFileStorage({
        roots: config.localStorageRoots,
        limits,
        rootsName: flagTable.localStorageRoots.flag,
        files: config.localModelFiles,
        sourceWatch,
      }),
      pvcStorage({
        root: config.pvcMountRoot,
        limits,
        rootName: flagTable.pvcMountRoot.flag,
        files: config.localModelFiles,
        sourceWatch,
      }),
      httpStorage({
        headersByHost,
        network: trusting,
        connectTimeoutMs: config.requestTimeoutMs,
        idleTimeoutMs: config.requestTimeoutMs,
        limits,
        ...streams,
      }),
      s3.right,
      gcsStorage({
        ...sdkOptions,
        endpoint: config.gcsEndpoint,
        credentialsFile: env.GOOGLE_APPLICATION_CREDENTIALS || undefined,
        network: trusting,
      }),
      // Both bound a file's connections: --download-streams and KServe's HF_XET_NUM_CONCURRENT_RANGE_GETS.
      hfStorage({
        ...hub,
        tokenFile: hfTokenFileOf(env),
        ...sdkOptions,
        network: trusting,
        streams: Math.min(streams.streams, streamsPerFile ?? Infinity),
      }),
    ],
    claiming: [
      azureBlobStorage({
        ...sdkOptions,
        endpoints: config.azureBlobEndpoint === undefined ? [] : [config.azureBlobEndpoint],
        credentials: azureCredentialsFromEnv(env, () => defaultAzureCredential(env)),
        agentFor: (url) => trusting.agentFor(url),
      }),
    ],
  });
};

/** The one download function of the agent and the storage initializer, and the Network its providers share. */
export interface StorageRouter {
  /** Every provider behind one function, picked per URI; `schemes` are the ones served. */
  readonly download: DownloadFunction & { readonly schemes: ReadonlyArray<string> };
  /** The connections (proxies, CAs, keep-alive) the providers use; the model server's client uses them too. */
  readonly network: Network;
}

/**
 * The storage router `config` asks for, for whoever downloads (the agent, the storage initializer): KServe's
 * per-host download headers (`<host>-headers`), the proxy variables, storage settings and credentials of `env`,
 * `--ca-bundle`, a declared size held to `space`; it also says which schemes are served (`--dry-run`'s warnings).
 * The Left names what is malformed, never its value (header values are secrets).
 */
export const storageRouter = (
  config: AppConfig,
  log: Logger,
  env: Env,
  space?: SpaceCheck,
): E.Either<string, StorageRouter> => {
  const headers = parseHostHeaders(env);
  if (E.isLeft(headers)) return E.left(`invalid download headers: ${headers.left}`);
  const given = networkFrom(config, env);
  if (E.isLeft(given)) return E.left(`invalid proxy or CA bundle settings: ${given.left}`);
  const network = withSslCertFile(given.right, env, log);
  // KServe's storage spec (STORAGE_CONFIG) and CA bundle ConfigMap, in the names the providers read.
  const storageEnv = kserveStorageEnv(env);
  if (E.isLeft(storageEnv)) return E.left(`invalid KServe storage settings: ${storageEnv.left}`);
  const storage = storageProviders(config, log, storageEnv.right, network, headers.right, space);
  if (E.isLeft(storage)) return storage;
  const download = routeStorage(storage.right.providers, storage.right.claiming);
  return E.right({ download, network });
};
