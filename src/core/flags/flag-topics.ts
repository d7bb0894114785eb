/** flagTopics: the flags by topic, in the order `--help` lists them under one heading each. */
import type { SettingField } from './app-config';

/** A heading of `--help` and the flags under it; every flag of the table is under exactly one (flag-table.test.ts). */
export const flagTopics: ReadonlyArray<readonly [string, ReadonlyArray<SettingField>]> = [
  [
    'Where the model list comes from',
    [
      'configDir',
      'source',
      'configmap',
      'namespace',
      'configmapKey',
      'watchTimeoutS',
      'maxConfigBytes',
      'settleMs',
      'watchPollMs',
    ],
  ],
  [
    'The model dir and the model server',
    [
      'modelDir',
      'minFreeBytes',
      'linkSameContent',
      'serverUrl',
      'protocol',
      'serverKind',
      'torchserveTokenFile',
      'requestTimeoutMs',
      'loadTimeoutMs',
      'serverWaitTimeout',
    ],
  ],
  [
    'Work, retries and resync',
    [
      'downloadConcurrency',
      'loadConcurrency',
      'retryBaseMs',
      'retryMaxMs',
      'maxAttempts',
      'resyncInterval',
      'maxUnlistedUnloads',
      'shutdownTimeout',
    ],
  ],
  [
    'Storage: downloads and their limits',
    [
      'localStorageRoots',
      'pvcMountRoot',
      'maxModelBytes',
      'maxArchiveRatio',
      'maxArchiveEntries',
      'maxModelFiles',
      'minDownloadRate',
      'minRateWindowMs',
      'storageConcurrency',
      'downloadStreams',
      'maxDownloadStreams',
      'progressIntervalMs',
      'caBundle',
    ],
  ],
  [
    'Storage: object stores',
    ['s3Endpoint', 's3Region', 's3Addressing', 's3Anonymous', 'azureBlobEndpoint', 'gcsEndpoint'],
  ],
  [
    'The HTTP surface (probes, metrics, status)',
    [
      'httpPort',
      'httpHost',
      'watchStallMs',
      'httpMaxConnections',
      'httpRequestTimeoutMs',
      'httpIdleTimeoutMs',
      'httpStatusPageSize',
    ],
  ],
  [
    "KServe's agent: its flags, and the proxy on the agent port",
    [
      'enablePuller',
      'componentPort',
      'port',
      'workers',
      'probePeriod',
      'proxyTimeout',
      'proxyBodyTimeout',
      'proxyBodyMinRate',
      'proxyMaxConnections',
    ],
  ],
  ['Modes and logging', ['dryRun', 'once', 'logLevel', 'logFormat']],
];
