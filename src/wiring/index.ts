/** The wiring: the real edges an AppConfig asks for, the one room that builds effects (agent, storage initializer). */
export { agentPortSettings } from './agent-port-proxy';
export {
  agentSettings,
  capabilities,
  configSourceFor,
  quickCallsUnderDirs,
  settleMs,
  type ConfigSourceHooks,
  type ConfigSourceWithStatus,
} from './capabilities';
export { initializerStorage, type InitializerStorage } from './initializer-storage';
export { downloadLimitsOf } from './storage';
export { SurfaceBindFailed, withKubeEvents, withSurface, type AgentRun } from './surface';
