/** SourceStatus: how a config source's watch is doing, whichever source it is. */
import type { ConfigDirStatus } from './config-dir';
import type { KubeWatchStatus } from './kube-api-source';

/** What /healthz, /status and the metrics read of the config source in force (`source` tells which it is). */
export type SourceStatus = ConfigDirStatus | KubeWatchStatus;
