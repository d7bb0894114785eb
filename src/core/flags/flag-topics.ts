/** flagTopics: the flags by topic, in the order `--help` lists them under one heading each. */
import type { SettingField } from './app-config';

/** A heading of `--help` and the flags under it. */
export type FlagTopic = readonly [string, ReadonlyArray<SettingField>];

/** What an operator sets, listed by `modelsync --help`; every flag is under exactly one topic of the two lists. */
export const flagTopics: ReadonlyArray<FlagTopic> = [
  ['Where the model list comes from', ['configDir', 'source', 'configmap', 'namespace', 'configmapKey']],
  [
    'The model dir and the model server',
    [
      'modelDir',
      'minFreeBytes',
      'linkSameContent',
      'nodeCacheDir',
      'nodeCacheMaxBytes',
      'nodeCacheMinFreeBytes',
      'serverUrl',
      'protocol',
      'serverKind',
      'torchserveTokenFile',
      'serverWaitTimeout',
    ],
  ],
  ['Work and resync', ['downloadConcurrency', 'loadConcurrency', 'resyncInterval', 'shutdownTimeout']],
  [
    'Storage',
    [
      'localStorageRoots',
      'pvcMountRoot',
      'localModelFiles',
      'maxModelBytes',
      'caBundle',
      's3Endpoint',
      's3Region',
      's3Addressing',
      's3Anonymous',
      'azureBlobEndpoint',
      'gcsEndpoint',
    ],
  ],
  [
    'The HTTP surface (probes, metrics, status) and Kubernetes Events',
    ['httpPort', 'httpHost', 'kubeEvents'],
  ],
  [
    "KServe's agent: its flags, and the proxy on the agent port",
    ['enablePuller', 'componentPort', 'port', 'workers', 'probePeriod', 'proxyTimeout'],
  ],
  ['Modes and logging', ['dryRun', 'once', 'logLevel', 'logFormat']],
];

/**
 * The tuning knobs, listed by `modelsync --help advanced`: their defaults suit a pod, and an operator reaches
 * for one only when a log line or a metric names it (a cap that was hit, a retry budget, an odd file system).
 */
export const advancedFlagTopics: ReadonlyArray<FlagTopic> = [
  ['Advanced: the config watch', ['watchPollMs', 'watchTimeoutS', 'maxConfigBytes']],
  [
    'Advanced: timeouts and retries',
    ['requestTimeoutMs', 'loadTimeoutMs', 'retryBaseMs', 'retryMaxMs', 'maxAttempts', 'maxUnlistedUnloads'],
  ],
  [
    'Advanced: downloads and their limits',
    [
      'maxArchiveRatio',
      'maxArchiveEntries',
      'maxModelFiles',
      'minDownloadRate',
      'minRateWindowMs',
      'storageConcurrency',
      'downloadStreams',
      'maxDownloadStreams',
      'progressIntervalMs',
    ],
  ],
  [
    'Advanced: the HTTP surface and the agent port',
    ['watchStallMs', 'httpMaxConnections', 'proxyBodyTimeout', 'proxyBodyMinRate', 'proxyMaxConnections'],
  ],
];
