/** The real edges (capabilities) and the agent settings an AppConfig asks for. */
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import type { AgentCapabilities, AgentSettings } from '../agent';
import { configDirSource, kubeApiSource, type KubeWatchStatus, type SourceStatus } from '../config-source';
import type { Env } from '../core/env';
import { flagTable, retryPolicyOf, type AppConfig } from '../core/flags/app-config';
import { quickUnder, spaceCheck } from '../fs';
import { loadJournal, modelDirStore } from '../model-dir';
import { torchServeModelServer, v2ModelServer } from '../model-server';
import type { Network } from '../net';
import type { ConfigSource, ModelServer } from '../ports';
import { heartbeatMs, recheckMs } from '../surface';
import { storageRouter } from './storage';

/** Who hears of each sign of a working watch (the config dir's or the API server's), beside its own status. */
export interface ConfigSourceHooks {
  readonly onAlive?: () => void;
}

/** A ConfigSource that also tells how its watch is doing (`status`). */
export type ConfigSourceWithStatus = ConfigSource & { readonly status?: () => SourceStatus };

/**
 * The config source `config` asks for (also what `--dry-run` reads): the config dir, or with `--source kube-api`
 * the ConfigMap through the API server (`env` gives `KUBECONFIG` or the in-cluster `KUBERNETES_SERVICE_*`).
 */
export const configSourceFor = (
  config: AppConfig,
  log: Logger,
  env: Env = {},
  hooks: ConfigSourceHooks = {},
): ConfigSourceWithStatus => {
  const common = {
    log: log.child({ component: 'config' }),
    maxBytes: config.maxConfigBytes,
    maxBytesName: flagTable.maxConfigBytes.flag,
    onAlive: hooks.onAlive,
  };
  return config.source === 'kube-api'
    ? kubeApiSource({
        ...common,
        name: config.configmap ?? '',
        namespace: config.namespace,
        key: config.configmapKey,
        env,
        watchTimeoutSeconds: config.watchTimeoutS,
        retry: retryPolicyOf(config),
      })
    : configDirSource({
        ...common,
        dir: config.configDir,
        pollMs: config.watchPollMs,
        pollName: flagTable.watchPollMs.flag,
        recheckMs: recheckMs(config.watchStallMs),
        // Often enough for `--watch-stall-ms` to judge the watch; chokidar's polling misses a removed dir about
        // one run in six, so there the check stays as frequent as the search for a missing dir.
        armedRecheckMs:
          config.watchPollMs > 0 ? recheckMs(config.watchStallMs) : heartbeatMs(config.watchStallMs),
      });
};

// The model server is the pod's neighbour: reached directly (never through a proxy), on kept-alive connections.
const modelServerFor = (config: AppConfig, network: Network): ModelServer => {
  const common = {
    baseUrl: config.serverUrl,
    timeoutMs: config.requestTimeoutMs,
    loadTimeoutMs: config.loadTimeoutMs,
    dispatcher: network.direct,
  };
  return config.protocol === 'torchserve'
    ? torchServeModelServer({ ...common, tokenFile: config.torchserveTokenFile })
    : v2ModelServer({ ...common, kind: config.serverKind, modelDir: config.modelDir });
};

/** The capabilities of an agent run, its config source telling how its watch is doing (as `capabilities` builds it). */
export type SurfacedCapabilities = AgentCapabilities & { readonly configSource: ConfigSourceWithStatus };

/** The real edges: what the agent runs on, with the config source's own status. */
export type Edges = SurfacedCapabilities & { readonly configSourceStatus?: () => KubeWatchStatus };

/**
 * The real edges for `config`: the model dir and its load journal, the model server client, the storage router
 * (`env` as storage.ts reads it: the Left names what is malformed, never quotes it), and the config source, whose
 * `status` tells how the watch is doing (`sourceHooks.onAlive` hears each sign of it too). Building them starts
 * nothing: the agent does, when subscribed.
 */
export const capabilities = (
  config: AppConfig,
  log: Logger,
  env: Env,
  sourceHooks: ConfigSourceHooks = {},
): E.Either<string, Edges> => {
  // One disk check for the store (the reserve, before each install) and the providers (a declared size).
  const space = spaceCheck(config.minFreeBytes, { reserveName: flagTable.minFreeBytes.flag });
  const storage = storageRouter(config, log, env, space);
  if (E.isLeft(storage)) return storage;
  const { download, network } = storage.right;
  const configSource = configSourceFor(config, log, env, sourceHooks);
  return E.right({
    configSource,
    // The kube-api watch's state, as integrators had it before every source told its status.
    ...(configSource.status !== undefined && config.source === 'kube-api'
      ? { configSourceStatus: configSource.status as () => KubeWatchStatus }
      : {}),
    // The store binds its own `component`.
    store: modelDirStore({
      root: config.modelDir,
      log,
      spaceCheck: space,
      linkSameContent: config.linkSameContent,
      ...(config.nodeCacheDir !== undefined && {
        nodeCache: {
          dir: config.nodeCacheDir,
          maxBytes: config.nodeCacheMaxBytes,
          minFreeBytes: config.nodeCacheMinFreeBytes,
        },
      }),
    }),
    journal: loadJournal({ root: config.modelDir, log }),
    server: modelServerFor(config, network),
    download,
    servedSchemes: download.schemes,
  });
};

/** The quiet time after a burst of config events before the confirming re-read: no flag, none needed tuning. */
export const settleMs = 100;

/** The agent settings `config` asks for (caps, retry policy), logging to `log`. */
export const agentSettings = (config: AppConfig, log: Logger): AgentSettings => ({
  log,
  downloadConcurrency: config.downloadConcurrency,
  loadConcurrency: config.loadConcurrency,
  retry: retryPolicyOf(config),
  settleMs,
  maxUnlistedUnloads: config.maxUnlistedUnloads,
});

/**
 * Lets the agent's file-system calls go inline under its dirs (`quickUnder`: those on a local file system): the model
 * dir, the node cache, the config dir. Not waited for: until a dir is known local (a statfs, which a hung mount never
 * answers), its calls go through libuv's pool.
 */
export const quickCallsUnderDirs = (config: AppConfig, log: Logger): void =>
  void quickUnder([
    config.modelDir,
    ...(config.nodeCacheDir === undefined ? [] : [config.nodeCacheDir]),
    ...(config.source === 'kube-api' ? [] : [config.configDir]),
  ]).then((roots) => log.debug({ roots }, 'file-system calls made inline under these dirs'));
