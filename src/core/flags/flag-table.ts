/**
 * The flag table: each setting's flag, env var, default, help and codec, once. `app-config.ts` makes the
 * AppConfig codec, its defaults and the cross-setting checks from it; `src/command/parse-args.ts` the CLI's options;
 * `npm run docs:flags` the flags table of docs/operating.md.
 */
import * as t from 'io-ts';
import { v2ServerKinds } from '../v2-server-kinds';
import { byteCount, duration, httpUrl, integerIn, kubeName, nonEmpty, oneOf } from './setting-codecs';
import type { FlagSpec } from './flag-spec';
import { storageFlags } from './storage-flags';
import { kserveFlags } from './kserve-flags';
import { surfaceFlags } from './surface-flags';

export type { FlagSpec } from './flag-spec';

/** pino's levels, most to least severe, and `silent` (the logger's `LogLevel`). */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** How log lines are written (the logger's `LogFormat`). */
export const logFormats = ['auto', 'pretty', 'json'] as const;

/** The load/unload dialects modelsync speaks. */
export const protocols = ['v2', 'torchserve'] as const;
/** Which V2 server `--server-url` is: `auto` asks it (`GET /v2`) at start. */
export const serverKinds = ['auto', ...v2ServerKinds] as const;

/** Where the model list comes from: the mounted ConfigMap dir, or the ConfigMap watched through the API server. */
export const configSources = ['dir', 'kube-api'] as const;

/** Every flag, keyed by its AppConfig field, in `--help` order. Flags are a contract: never rename one. */
export const flagTable = {
  configDir: {
    flag: '--config-dir',
    arg: 'dir',
    env: 'MODELSYNC_CONFIG_DIR',
    default: '/mnt/configs',
    help: 'directory of the mounted ConfigMap holding `models.json`',
    codec: nonEmpty,
  },
  modelDir: {
    flag: '--model-dir',
    arg: 'dir',
    env: 'MODELSYNC_MODEL_DIR',
    default: '/mnt/models',
    help: 'directory shared with the model server; models go to `<dir>/<modelName>/`',
    codec: nonEmpty,
  },
  serverUrl: {
    flag: '--server-url',
    arg: 'url',
    env: 'MODELSYNC_SERVER_URL',
    default: 'http://127.0.0.1:8080',
    help: 'model server base URL (TorchServe: the management API, usually port 8081)',
    codec: httpUrl,
  },
  protocol: {
    flag: '--protocol',
    arg: 'name',
    env: 'MODELSYNC_PROTOCOL',
    default: 'v2',
    help: '`v2` (Triton, MLServer, KServe model server) or `torchserve`',
    codec: oneOf('Protocol', protocols),
    choices: protocols,
  },
  serverKind: {
    flag: '--server-kind',
    arg: 'kind',
    env: 'MODELSYNC_SERVER_KIND',
    default: 'auto',
    help:
      'with `--protocol v2`: which server it is, for what one client cannot hide (how a name goes into a URL, ' +
      'which names it can take, how its loaded models are listed, which failed loads are final, when an unload ' +
      'is done); `auto` asks the server (`GET /v2`) at start, `generic` assumes nothing beyond the protocol',
    codec: oneOf('ServerKind', serverKinds),
    choices: serverKinds,
  },
  downloadConcurrency: {
    flag: '--download-concurrency',
    arg: 'n',
    env: 'MODELSYNC_DOWNLOAD_CONCURRENCY',
    default: '4',
    help: 'downloads running at once, across models',
    codec: integerIn('DownloadConcurrency', 1, 256),
  },
  loadConcurrency: {
    flag: '--load-concurrency',
    arg: 'n',
    env: 'MODELSYNC_LOAD_CONCURRENCY',
    default: '2',
    help: 'load and unload calls running at once, across models',
    codec: integerIn('LoadConcurrency', 1, 256),
  },
  logLevel: {
    flag: '--log-level',
    arg: 'level',
    env: 'MODELSYNC_LOG_LEVEL',
    default: 'info',
    help: 'level of the JSON log lines on stderr: `fatal` … `trace`, or `silent`',
    codec: oneOf('LogLevel', logLevels),
    choices: logLevels,
  },
  logFormat: {
    flag: '--log-format',
    arg: 'format',
    env: 'MODELSYNC_LOG_FORMAT',
    default: 'auto',
    help: '`json` (one JSON object a line), `pretty` (for people), or `auto`: pretty when stderr is a terminal, else JSON',
    codec: oneOf('LogFormat', logFormats),
    choices: logFormats,
  },
  watchPollMs: {
    flag: '--watch-poll-ms',
    arg: 'ms',
    env: 'MODELSYNC_WATCH_POLL_MS',
    default: '0',
    help: 'poll the config dir every this many ms instead of inotify (NFS, some bind mounts); 0 = inotify',
    codec: integerIn('WatchPollMs', 0, 3_600_000),
  },
  source: {
    flag: '--source',
    arg: 'name',
    env: 'MODELSYNC_SOURCE',
    default: 'dir',
    help: '`dir`: `models.json` in `--config-dir` (kubelet syncs it, within about a minute); `kube-api`: the ConfigMap `--configmap`, watched through the API server (milliseconds; needs RBAC)',
    codec: oneOf('ConfigSource', configSources),
    choices: configSources,
  },
  configmap: {
    flag: '--configmap',
    arg: 'name',
    env: 'MODELSYNC_CONFIGMAP',
    help: 'with `--source kube-api`: the ConfigMap holding the model list (required)',
    codec: kubeName('ConfigMapName', 253),
    optional: true,
  },
  namespace: {
    flag: '--namespace',
    arg: 'name',
    env: 'MODELSYNC_NAMESPACE',
    help: "with `--source kube-api`: the ConfigMap's namespace; default the pod's (the service account mount's `namespace` file), else the kubeconfig context's, else `default`",
    codec: kubeName('Namespace', 63, true),
    optional: true,
  },
  configmapKey: {
    flag: '--configmap-key',
    arg: 'key',
    env: 'MODELSYNC_CONFIGMAP_KEY',
    default: 'models.json',
    help: 'with `--source kube-api`: the key of the ConfigMap holding the model list',
    codec: nonEmpty,
  },
  watchTimeoutS: {
    flag: '--watch-timeout-s',
    arg: 's',
    env: 'MODELSYNC_WATCH_TIMEOUT_S',
    default: '300',
    help: 'with `--source kube-api`: the API server ends each watch after this long and it is re-opened; a watch silent for longer (plus a grace of the same, at most 30 s) is presumed dead and re-established',
    codec: integerIn('WatchTimeoutS', 1, 3600),
  },
  maxConfigBytes: {
    flag: '--max-config-bytes',
    arg: 'n',
    env: 'MODELSYNC_MAX_CONFIG_BYTES',
    default: '33554432',
    help:
      'largest `models.json` read, in bytes (32 MiB; a 100,000-model file, pretty-printed, is 18.6 MB); ' +
      'a bigger one is refused unread and the last good config stays',
    codec: integerIn('MaxConfigBytes', 2, 1_073_741_824),
  },
  requestTimeoutMs: {
    flag: '--request-timeout-ms',
    arg: 'ms',
    env: 'MODELSYNC_REQUEST_TIMEOUT_MS',
    default: '30000',
    help: 'timeout of unload and index calls, of connecting to storage, and of a download that stops sending bytes',
    codec: integerIn('RequestTimeoutMs', 100, 3_600_000),
  },
  ...storageFlags,
  serverWaitTimeout: {
    flag: '--server-wait-timeout',
    arg: 'duration',
    env: 'MODELSYNC_SERVER_WAIT_TIMEOUT',
    default: '5m',
    help:
      'with `--once`: how long to wait for the model server to answer at start before giving up with exit 3 ' +
      '(`0`: for ever). Sync mode always waits: the server starts beside it, and `/readyz` says it is not ready',
    codec: duration('ServerWaitTimeout', 0, 86_400_000),
  },
  loadTimeoutMs: {
    flag: '--load-timeout-ms',
    arg: 'ms',
    env: 'MODELSYNC_LOAD_TIMEOUT_MS',
    default: '300000',
    help: 'timeout of one load call',
    codec: integerIn('LoadTimeoutMs', 100, 86_400_000),
  },
  retryBaseMs: {
    flag: '--retry-base-ms',
    arg: 'ms',
    env: 'MODELSYNC_RETRY_BASE_MS',
    default: '500',
    help: 'first retry delay of a transient failure (doubles each time, full jitter); at most `--retry-max-ms`',
    codec: integerIn('RetryBaseMs', 1, 3_600_000),
  },
  retryMaxMs: {
    flag: '--retry-max-ms',
    arg: 'ms',
    env: 'MODELSYNC_RETRY_MAX_MS',
    default: '30000',
    help: 'cap of the retry delay',
    codec: integerIn('RetryMaxMs', 1, 86_400_000),
  },
  maxAttempts: {
    flag: '--max-attempts',
    arg: 'n',
    env: 'MODELSYNC_MAX_ATTEMPTS',
    default: '8',
    help: 'attempts of a transiently failing step before the model is marked failed',
    codec: integerIn('MaxAttempts', 1, 1000),
  },
  torchserveTokenFile: {
    flag: '--torchserve-token-file',
    arg: 'file',
    env: 'MODELSYNC_TORCHSERVE_TOKEN_FILE',
    help: 'TorchServe `key_file.json` (its `management.key`) or a plain token; re-read on every call',
    codec: nonEmpty,
    optional: true,
  },
  resyncInterval: {
    flag: '--resync-interval',
    arg: 'duration',
    env: 'MODELSYNC_RESYNC_INTERVAL',
    default: '60s',
    help:
      're-read `models.json`, ask the model server what it has loaded and repair drift (reload what it lost, ' +
      'unload what the config does not list, retry failed models) this often, and on SIGHUP: `60s`, `5m`, `1500ms`; 0 = only on SIGHUP',
    codec: duration('ResyncInterval', 0, 86_400_000),
  },
  maxUnlistedUnloads: {
    flag: '--max-unlisted-unloads',
    arg: 'n',
    env: 'MODELSYNC_MAX_UNLISTED_UNLOADS',
    default: '100',
    help:
      'unloads of models the model server lists but no config does: at most this many at start, in progress ' +
      'after each resync (retried ones count); the rest wait for the next resync (a warn line, ' +
      '`modelsync_repairs_deferred_total`). They run two at a time beside, never instead of, the loads of ' +
      'configured models',
    codec: integerIn('MaxUnlistedUnloads', 0, 100_000),
  },
  minFreeBytes: {
    flag: '--min-free-bytes',
    arg: 'bytes',
    env: 'MODELSYNC_MIN_FREE_BYTES',
    default: '0',
    help:
      'bytes to keep free on the model volume: a download whose size (when the storage declares it), or the copy of ' +
      'a model of the same content, that would leave less fails (`no-space`) before it starts',
    codec: byteCount('MinFreeBytes', 0, Number.MAX_SAFE_INTEGER),
  },
  linkSameContent: {
    flag: '--link-same-content',
    env: 'MODELSYNC_LINK_SAME_CONTENT',
    help:
      'models of one stored content share its files as hard links rather than each holding a copy (a reflink clone ' +
      'where the file system has them). Only when the model server mounts the model dir read-only (as `deploy/` ' +
      'does): a server that can write a linked file changes every model sharing it',
    codec: t.boolean,
  },
  shutdownTimeout: {
    flag: '--shutdown-timeout',
    arg: 'duration',
    env: 'MODELSYNC_SHUTDOWN_TIMEOUT',
    default: '20s',
    help: 'on SIGTERM or SIGINT, how long load and unload calls in flight may finish (downloads stop at once) before exit 0',
    codec: duration('ShutdownTimeout', 0, 3_600_000),
  },
  // The HTTP surface: probes, metrics, per-model status.
  ...surfaceFlags,
  // KServe's agent spelling, and the agent port's proxy.
  ...kserveFlags,
  dryRun: {
    flag: '--dry-run',
    env: 'MODELSYNC_DRY_RUN',
    help: 'print one JSON line per op on stdout instead of applying it (storage URIs shown without credentials)',
    codec: t.boolean,
  },
  once: {
    flag: '--once',
    env: 'MODELSYNC_ONCE',
    help: 'sync the current config, list the models that failed and exit: 0 when every model is loaded, else 1; with `--dry-run`: print its ops and exit (1 if it is invalid)',
    codec: t.boolean,
  },
} as const satisfies Readonly<Record<string, FlagSpec>>;
