/**
 * The wiring: the real edges an AppConfig asks for (capabilities, the storage router, the storage initializer's
 * dest dirs, the HTTP surface). The one room that builds effects for the agent and the storage initializer.
 */
export { agentPortSettings, type AgentPortSettings } from './agent-port-proxy';
export {
  agentSettings,
  capabilities,
  configSourceFor,
  settleMs,
  type ConfigSourceHooks,
  type Edges,
  type ConfigSourceWithStatus,
} from './capabilities';
export { initializerStorage, type InitializerStorage } from './initializer-storage';
export { downloadLimitsOf, storageRouter, type StorageRouter } from './storage';
export {
  SurfaceBindFailed,
  withSurface,
  type AgentRun,
  type SurfacedCapabilities,
  type SurfaceOptions,
} from './surface';
