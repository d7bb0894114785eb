/**
 * The flag table: each setting's flag, env var, default, help and codec, once. `app-config.ts` makes the
 * AppConfig codec, its defaults and the cross-setting checks from it; `src/command/parse-args.ts` the CLI's options;
 * `npm run docs:flags` the flags table of docs/operating.md.
 */
import * as t from 'io-ts';
import { v2ServerKinds } from '../v2-server-kinds';
import {
  absolutePath,
  byteCount,
  duration,
  hostAddress,
  httpUrl,
  integerIn,
  kubeName,
  nonEmpty,
  choiceOf,
} from './setting-codecs';
import { withNames, type FlagEntry } from './flag-spec';
import { storageFlags } from './storage-flags';
import { kserveFlags } from './kserve-flags';

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

/** Whether the agent writes Kubernetes Events on its Pod (`--kube-events`). */
export const kubeEventModes = ['auto', 'off'] as const;

/**
 * Every flag, keyed by its AppConfig field (which spells its flag and env var), in `--help` order. Flags are a
 * contract: never rename one.
 */
export const flagTable = withNames({
  configDir: {
    arg: 'dir',
    default: '/mnt/configs',
    help: 'directory of the mounted ConfigMap holding `models.json`',
    codec: nonEmpty,
  },
  modelDir: {
    arg: 'dir',
    default: '/mnt/models',
    help: 'directory shared with the model server; models go to `<dir>/<modelName>/`',
    codec: nonEmpty,
  },
  serverUrl: {
    arg: 'url',
    default: 'http://127.0.0.1:8080',
    help: 'model server base URL (TorchServe: the management API, usually port 8081)',
    codec: httpUrl,
  },
  protocol: {
    arg: 'name',
    default: 'v2',
    help: '`v2` (Triton, MLServer, KServe model server) or `torchserve`',
    ...choiceOf('Protocol', protocols),
  },
  serverKind: {
    arg: 'kind',
    default: 'auto',
    help: 'with `--protocol v2`: which server it is, for what one client cannot hide (how a name goes into a URL, which names it can take, how its loaded models are listed, which failed loads are final, when an unload is done); `auto` asks the server (`GET /v2`) at start, `generic` assumes nothing beyond the protocol',
    ...choiceOf('ServerKind', serverKinds),
  },
  downloadConcurrency: {
    arg: 'n',
    default: '4',
    help: 'downloads running at once, across models',
    codec: integerIn('DownloadConcurrency', 1, 256),
  },
  loadConcurrency: {
    arg: 'n',
    default: '2',
    help: 'load and unload calls running at once, across models',
    codec: integerIn('LoadConcurrency', 1, 256),
  },
  logLevel: {
    arg: 'level',
    default: 'info',
    help: 'level of the JSON log lines on stderr: `fatal` … `trace`, or `silent`',
    ...choiceOf('LogLevel', logLevels),
  },
  logFormat: {
    arg: 'format',
    default: 'auto',
    help: '`json` (one JSON object a line), `pretty` (for people), or `auto`: pretty when stderr is a terminal, else JSON',
    ...choiceOf('LogFormat', logFormats),
  },
  watchPollMs: {
    arg: 'ms',
    default: '0',
    help: 'poll the config dir every this many ms instead of inotify (NFS, some bind mounts); 0 = inotify',
    codec: integerIn('WatchPollMs', 0, 3_600_000),
  },
  source: {
    arg: 'name',
    default: 'dir',
    help: '`dir`: `models.json` in `--config-dir` (kubelet syncs it, within about a minute); `kube-api`: the ConfigMap `--configmap`, watched through the API server (milliseconds; needs RBAC)',
    ...choiceOf('ConfigSource', configSources),
  },
  configmap: {
    arg: 'name',
    help: 'with `--source kube-api`: the ConfigMap holding the model list (required)',
    codec: kubeName('ConfigMapName', 253),
  },
  namespace: {
    arg: 'name',
    help: "with `--source kube-api`: the ConfigMap's namespace; default the pod's (the service account mount's `namespace` file), else the kubeconfig context's, else `default`",
    codec: kubeName('Namespace', 63, true),
  },
  configmapKey: {
    arg: 'key',
    default: 'models.json',
    help: 'with `--source kube-api`: the key of the ConfigMap holding the model list',
    codec: nonEmpty,
  },
  watchTimeoutS: {
    arg: 's',
    default: '300',
    help: 'with `--source kube-api`: the API server ends each watch after this long and it is re-opened; a watch silent for longer (plus a grace of the same, at most 30 s) is presumed dead and re-established',
    codec: integerIn('WatchTimeoutS', 1, 3600),
  },
  maxConfigBytes: {
    arg: 'n',
    default: '33554432',
    help: 'largest `models.json` read, in bytes (32 MiB; a 100,000-model file, pretty-printed, is 18.6 MB); a bigger one is refused unread and the last good config stays',
    codec: integerIn('MaxConfigBytes', 2, 1_073_741_824),
  },
  requestTimeoutMs: {
    arg: 'ms',
    default: '30000',
    help: 'timeout of unload and index calls, of connecting to storage, and of a download that stops sending bytes',
    codec: integerIn('RequestTimeoutMs', 100, 3_600_000),
  },
  ...storageFlags,
  serverWaitTimeout: {
    arg: 'duration',
    default: '5m',
    help: 'with `--once`: how long to wait for the model server to answer at start before giving up with exit 3 (`0`: for ever). Sync mode always waits: the server starts beside it, and `/readyz` says it is not ready',
    codec: duration('ServerWaitTimeout', 0, 86_400_000),
  },
  loadTimeoutMs: {
    arg: 'ms',
    default: '300000',
    help: 'timeout of one load call',
    codec: integerIn('LoadTimeoutMs', 100, 86_400_000),
  },
  retryBaseMs: {
    arg: 'ms',
    default: '500',
    help: 'first retry delay of a transient failure (doubles each time, full jitter); at most `--retry-max-ms`',
    codec: integerIn('RetryBaseMs', 1, 3_600_000),
  },
  retryMaxMs: {
    arg: 'ms',
    default: '30000',
    help: 'cap of the retry delay',
    codec: integerIn('RetryMaxMs', 1, 86_400_000),
  },
  maxAttempts: {
    arg: 'n',
    default: '8',
    help: 'attempts of a transiently failing step before the model is marked failed',
    codec: integerIn('MaxAttempts', 1, 1000),
  },
  torchserveTokenFile: {
    arg: 'file',
    help: 'TorchServe `key_file.json` (its `management.key`) or a plain token; re-read on every call',
    codec: nonEmpty,
  },
  resyncInterval: {
    arg: 'duration',
    default: '60s',
    help: 're-read `models.json`, ask the model server what it has loaded and repair drift (reload what it lost, unload what the config does not list, retry failed models) this often, and on SIGHUP: `60s`, `5m`, `1500ms`; 0 = only on SIGHUP',
    codec: duration('ResyncInterval', 0, 86_400_000),
  },
  maxUnlistedUnloads: {
    arg: 'n',
    default: '100',
    help: 'unloads of models the model server lists but no config does: at most this many at start, in progress after each resync (retried ones count); the rest wait for the next resync (a warn line, `modelsync_repairs_deferred_total`). They run two at a time beside, never instead of, the loads of configured models',
    codec: integerIn('MaxUnlistedUnloads', 0, 100_000),
  },
  minFreeBytes: {
    arg: 'bytes',
    default: '0',
    help: 'bytes to keep free on the model volume: a download whose size (when the storage declares it), or the copy of a model of the same content, that would leave less fails (`no-space`) before it starts',
    codec: byteCount('MinFreeBytes', 0, Number.MAX_SAFE_INTEGER),
  },
  linkSameContent: {
    help: 'models of one stored content share its files as hard links rather than each holding a copy (a reflink clone where the file system has them). Only when the model server mounts the model dir read-only (as `deploy/` does): a server that can write a linked file changes every model sharing it',
    codec: t.boolean,
  },
  nodeCacheDir: {
    arg: 'dir',
    help: "a dir every modelsync on the node shares (a hostPath): a model whose storage names its content (ETags, generations, a commit) is downloaded once per node and each model dir filled from there with read-only hard links (copies across file systems), after this pod read the content's listing with its own credentials; not the model dir nor a dir in it (the model server shares the model dir); unset: no node cache",
    codec: absolutePath('NodeCacheDir'),
  },
  nodeCacheMaxBytes: {
    arg: 'bytes',
    default: '0',
    help: 'the most the node cache may hold: after each model it puts in, the entries used least recently go until it fits, never one a model dir on the node still links; 0 = no cap',
    codec: byteCount('NodeCacheMaxBytes', 0, Number.MAX_SAFE_INTEGER),
  },
  nodeCacheMinFreeBytes: {
    arg: 'bytes',
    default: '0',
    help: "bytes to keep free on the node cache's file system, evicting as `--node-cache-max-bytes` does; 0 = no floor",
    codec: byteCount('NodeCacheMinFreeBytes', 0, Number.MAX_SAFE_INTEGER),
  },
  shutdownTimeout: {
    arg: 'duration',
    default: '20s',
    help: 'on SIGTERM or SIGINT, how long load and unload calls in flight may finish (downloads stop at once) before exit 0',
    codec: duration('ShutdownTimeout', 0, 3_600_000),
  },
  // The HTTP surface: probes, metrics, per-model status.
  httpPort: {
    arg: 'port',
    default: '9081',
    help: 'port of the HTTP surface (on every interface unless `--http-host`): `/healthz`, `/readyz`, `/metrics`, `/status`; 0 = off',
    codec: integerIn('HttpPort', 0, 65_535),
  },
  httpHost: {
    arg: 'address',
    help: 'address the HTTP surface binds (`127.0.0.1`, `::1`, the pod IP); default every interface, where the kubelet probes the pod IP',
    codec: hostAddress,
  },
  httpMaxConnections: {
    arg: 'n',
    default: '64',
    help: 'connections the HTTP surface holds at once; one more evicts the oldest not being answered (idle, still sending its head, or draining after its answer), or else takes one of 16 more kept for what the surface answers itself, or is closed',
    codec: integerIn('HttpMaxConnections', 4, 65_535),
  },
  kubeEvents: {
    arg: 'mode',
    default: 'auto',
    help: "Kubernetes Events on the agent's own Pod for a model loaded, unloaded or failed and a config rejected (`kubectl describe pod`), rate-limited like client-go's recorder, never holding a load up. `auto`: when the Pod is known (`POD_NAME`/`POD_NAMESPACE`/`POD_UID` from the downward API; in a pod, else the Pod its service account token was issued for, else its hostname; `kubectl describe pod` shows them only with the Pod's uid) and the API server reachable with the agent's credentials (RBAC: create and patch on events); `off`: none",
    ...choiceOf('KubeEvents', kubeEventModes),
  },
  watchStallMs: {
    arg: 'ms',
    default: '60000',
    help: '`/healthz` answers 503 once the config watch has made no progress for this long while the config dir exists, or the event loop has not turned for this long',
    codec: integerIn('WatchStallMs', 500, 86_400_000),
  },
  // KServe's agent spelling, and the agent port's proxy.
  ...kserveFlags,
  dryRun: {
    help: 'print one JSON line per op on stdout instead of applying it (storage URIs shown without credentials)',
    codec: t.boolean,
  },
  once: {
    help: 'sync the current config, list the models that failed and exit: 0 when every model is loaded, else 1; with `--dry-run`: print its ops and exit (1 if it is invalid)',
    codec: t.boolean,
  },
} as const satisfies Readonly<Record<string, FlagEntry>>);
