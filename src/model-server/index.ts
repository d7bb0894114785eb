/**
 * Model-server clients (`ModelServer`): load, unload and the index over the V2 repository extension and over
 * TorchServe's management API.
 */
export { torchServeModelServer } from './torchserve';
export { v2ModelServer, type V2ModelServerOptions } from './v2';
export { v2Dialects, type V2Dialect, type V2ServerKind } from './v2-dialect';
