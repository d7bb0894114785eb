/**
 * Config sources (`ConfigSource`): where models.json comes from, the watched config dir or one ConfigMap through
 * the API server.
 */
export { configDirSource, type ConfigDirOptions } from './config-dir';
export { type ConfigReadOptions, readConfigFile } from './config-file';
export {
  kubeApiSource,
  type KubeApiSource,
  type KubeApiSourceOptions,
  kubeWatchProblem,
  type KubeWatchStatus,
  type SourceStatus,
} from './kube-api-source';
export { eventWriteFailure, kubeEventsTarget } from './kube-events-api';
