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

export { coalesceBursts, decodeSnapshot, keepValid, readConfig, type BurstPacing } from './pipeline';
export { applyModelOps, selectConfigEvents, skipUnchangedReads, toModelOps, type OpRunner } from './pipeline';

export {
  acceptedSnapshots,
  currentModelOps,
  modelOps,
  syncModels,
  type ConfigPipelineDeps,
  type SyncDeps,
} from './agent';
export {
  abortable,
  ModelDirUnusable,
  ServerNotAnswering,
  startAgent,
  type AgentCapabilities,
  type AgentSettings,
  type AgentStart,
} from './agent';
export {
  agentSettings,
  capabilities,
  configSourceFor,
  downloadLimitsOf,
  type ConfigSourceHooks,
  type ConfigSourceWithStatus,
} from './wiring';
export { parseArgs, type ParsedArgs } from './command';
export type { Env } from './core/env';
export { backoffDelay, retryDelay, type Jitter, type RetryPolicy } from './core/retry-policy';
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
export { createLoader, type Loader, type LoaderDeps } from './loader';
export { createSlots, type Slots } from './core/slots';
export { createWorkQueue, type WorkQueue, type WorkQueueCounts } from './loader';
export { routeStorage } from './storage';
export type * from './ports';
export { noTelemetry } from './ports';

export { configDirSource, type ConfigDirOptions } from './config-source';
export {
  kubeApiSource,
  type KubeApiSource,
  type KubeApiSourceOptions,
  type KubeWatchStatus,
} from './config-source';
export { readConfigFile, type ConfigReadOptions } from './config-source';
export { createLogger, redactingDestination, type LogFormat, type LogLevel } from './log';
export {
  archiveFormatOf,
  extractFile,
  extractStream,
  type ArchiveFormat,
  type ExtractOptions,
} from './storage';
export type { ArchiveLimits } from './storage';
export { loadJournal, modelDirStore } from './model-dir';
export { torchServeModelServer, v2ModelServer } from './model-server';
export { httpStorage, type HttpStorageOptions } from './storage';
export { localFileStorage, type LocalStorageOptions } from './storage';
export { defaultDownloadLimits, type CapNames, type DownloadLimits, type MinRate } from './storage';
export { TransferGuard, type TransferGuardOptions } from './storage';
