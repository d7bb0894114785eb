/**
 * `modelsync/testing`: what an integrator's tests need to run modelsync for real — the kubelet AtomicWriter
 * emulator (ConfigMap updates as kubelet makes them), stand-ins for a V2 model server, TorchServe, the GCS
 * JSON API, the Hugging Face Hub (API, resolve, its CDN) and the Kubernetes API server (one ConfigMap: list, watch, bookmarks, 410, tokens), the HTTP server they run on (for stand-ins of one's own), a config source that never changes, a
 * seeded random for replayable randomized tests, and waiting with a deadline (sleep, waitFor, withTimeout).
 */
export {
  atomicWrite,
  removeAllKeys,
  type AtomicWriteOptions,
  type AtomicWritePayload,
  type AtomicWriteResult,
  type AtomicWriteStep,
  type FileProjection,
} from './atomic-writer';
export { fixedConfigSource } from './fixed-config-source';
export { deleteAndRecreate, writeInPlace, writeThenRename } from './plain-writers';
export {
  startGcsStandIn,
  type GcsFault,
  type GcsObjectVersion,
  type GcsRequest,
  type GcsRoute,
  type GcsStandIn,
  type GcsStandInOptions,
} from './gcs-stand-in';
export {
  startHubStandIn,
  type HubFault,
  type HubFileSpec,
  type HubRepoOptions,
  type HubRequest,
  type HubRoute,
  type HubStandIn,
  type HubStandInOptions,
} from './hub-stand-in';
export {
  startHttpServer,
  type HttpHandler,
  type HttpServerOptions,
  type RunningHttpServer,
} from './http-server';
export {
  startKubeApiStandIn,
  type KubeApiChange,
  type KubeApiRequest,
  type KubeApiStandIn,
  type KubeApiStandInOptions,
} from './kube-api-stand-in';
export { checkModelDir, manifestOf, type ModelDirCheck, type ModelManifest } from './model-manifest';
export { seededRandom } from './seeded-random';
export {
  startTorchServeStandIn,
  type TorchServeRequest,
  type TorchServeStandIn,
} from './torchserve-stand-in';
export {
  startV2ModelServer,
  type V2Load,
  type V2ModelServerStandIn,
  type V2Fault,
  type V2ModelServerStandInOptions,
  type V2Request,
  type V2Route,
} from './v2-model-server';
export { v2Profiles, type V2Answer, type V2Profile, type V2ProfileName } from './v2-profiles';
export { sleep, waitFor, withTimeout, type WaitingFor } from './wait';
