/**
 * modelsync's public API (`modelsync`), for integrators who start the agent with their own operators or compose
 * their own pipeline: the codecs and types, the pure core, every operator, the composition functions, the
 * start-up sequence, the ports, and the edges that implement them. The test kit is `modelsync/testing`.
 */
export {
  AppConfig,
  defaultAppConfig,
  flagTable,
  logLevels,
  protocols,
  type FlagSpec,
  type LogLevel,
  type SettingField,
} from './core/flags/app-config';
export { configFileName, dataLinkName } from './core/config-files';
export { decodeConfig, formatValidationErrors } from './core/decode-config';
export { applyOps, diff } from './core/diff';
export * from './core/errors';
export { ModelConfig, ModelConfigs, ModelSpec, type ModelSpecJson } from './core/model-config';
export { ModelName, modelNameProblem } from './core/model-name';
export {
  add,
  modelOpToJson,
  remove,
  type Add,
  type ModelOp,
  type ModelOpJson,
  type Remove,
} from './core/model-op';
export { parseQuantity, Quantity, quantityEquals, zeroQuantity } from './core/quantity';
export {
  emptySnapshot,
  snapshotEquals,
  snapshotOf,
  specEquals,
  specToJson,
  type Snapshot,
} from './core/snapshot';

export { coalesceBursts, type BurstPacing } from './pipeline/coalesce-bursts';
export { decodeSnapshot } from './pipeline/decode-snapshot';
export { keepValid } from './pipeline/keep-valid';
export { readConfig } from './pipeline/read-config';
export { selectConfigEvents } from './pipeline/select-config-events';
export { skipUnchangedReads } from './pipeline/skip-unchanged-reads';
export { toModelOps } from './pipeline/to-model-ops';

export { applyModelOps, type OpRunner } from './pipeline/apply-model-ops';

export {
  acceptedSnapshots,
  currentModelOps,
  modelOps,
  syncModels,
  type ConfigPipelineDeps,
  type SyncDeps,
} from './agent/sync-models';
export { startAgent, type AgentCapabilities, type AgentSettings, type AgentStart } from './agent/start-agent';
export {
  agentSettings,
  capabilities,
  configSourceFor,
  type ConfigSourceHooks,
  type ConfigSourceWithStatus,
} from './wiring/capabilities';
export { parseArgs, type Env, type ParsedArgs } from './command/parse-args';
export { backoffDelay } from './core/backoff';
export {
  readyEvent,
  statusEvent,
  type AgentEvent,
  type ModelPhase,
  type ModelStatus,
} from './core/model-status';
export { inPlaceSnapshot, type InPlace } from './core/in-place';
export { unknownSpec } from './core/snapshot';
export { parseHostHeaders, parseStorageUri } from './core/storage-uri';
export { redact, redactLogLine, redactUri, registerSecret, SecretRegistry, secrets } from './core/redact';
export { abortable } from './agent/abortable';
export { createLoader, type Loader, type LoaderDeps, type RetryPolicy } from './loader/loader';
export { createSlots, type Slots } from './core/slots';
export { createWorkQueue, type WorkQueue, type WorkQueueCounts } from './loader/work-queue';
export { routeStorage } from './storage/router';
export type * from './ports';
export { noTelemetry } from './ports';

export { configDirSource, type ConfigDirOptions } from './config-source/config-dir';
export {
  kubeApiSource,
  type KubeApiSource,
  type KubeApiSourceOptions,
  type KubeWatchStatus,
} from './config-source/kube-api-source';
export { readConfigFile, type ConfigReadOptions } from './config-source/config-file';
export { createLogger, redactingDestination } from './log/logger';
export {
  archiveFormatOf,
  extractFile,
  extractStream,
  type ArchiveFormat,
  type ExtractOptions,
} from './storage/archive/extract';
export type { ArchiveLimits } from './storage/archive/budget';
export { loadJournal } from './model-dir/load-journal';
export { modelDirStore } from './model-dir/store';
export { torchServeModelServer } from './model-server/torchserve';
export { v2ModelServer } from './model-server/v2';
export { httpStorage, type HttpStorageOptions } from './storage/http/http-storage';
export { localFileStorage, type LocalStorageOptions } from './storage/local/local-storage';
export {
  defaultDownloadLimits,
  downloadLimitsOf,
  type DownloadLimits,
  type MinRate,
} from './storage/download-limits';
export { TransferGuard, type TransferGuardOptions } from './storage/transfer-guard';
