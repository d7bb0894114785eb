/**
 * Model-server clients (`ModelServer`): load, unload and the index over the V2 repository extension and over
 * TorchServe's management API.
 */
export { torchServeModelServer } from './torchserve';
export { v2ModelServer } from './v2';
