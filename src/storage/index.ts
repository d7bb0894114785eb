/**
 * Storage (`StorageProvider`): a model fetched from its storage URI into a dir (local paths, http(s), S3, GCS,
 * Azure Blob, the Hugging Face Hub, archives), every provider under one model's limits.
 */
export { type ArchiveLimits } from './archive/budget';
export {
  type ArchiveFormat,
  archiveFormatOf,
  extractFile,
  type ExtractOptions,
  extractStream,
} from './archive/extract';
export {
  type CapField,
  type CapNames,
  defaultDownloadLimits,
  type DownloadLimits,
  type MinRate,
} from './download-limits';
export { httpStorage, type HttpStorageOptions } from './http/http-storage';
export { hfSettingsFrom, hfTokenFileOf, type HfSettings } from './hub/hf-settings';
export { hfStorage, type HfStorageOptions } from './hub/hf-storage';
export {
  localFileStorage,
  type LocalStorageOptions,
  pvcStorage,
  type PvcStorageOptions,
} from './local/local-storage';
export { sourceWatches } from './local/source-watch';
export { azureBlobStorage } from './object-store/azure-blob';
export {
  azureCredentialsFromEnv,
  type AzureTokenCredential,
  withCheckedFiles,
} from './object-store/azure-credentials';
export { gcsStorage } from './object-store/gcs';
export { s3Credentials } from './object-store/s3-credentials';
export { s3SettingsFrom } from './object-store/s3-settings';
export { s3Storage } from './object-store/s3';
export { type ClaimingProvider, routeStorage } from './router';
export { TransferGuard, type TransferGuardOptions } from './transfer-guard';
