/** lazyModule: a dependency loaded at its first use, not when modelsync starts. */

/**
 * `load` (a `require` of one package: on Node 24 an ESM-only one too) run at the first call and remembered. For the
 * cloud SDKs and the Kubernetes client: each costs ~20 MB of RSS at import (measured: @aws-sdk/client-s3 21,
 * @azure/storage-blob 20, @google-cloud/storage 22), which a sidecar that serves none of their models would carry.
 */
export const lazyModule = <T>(load: () => T): (() => T) => {
  let loaded: { readonly module: T } | undefined;
  return () => (loaded ??= { module: load() }).module;
};
