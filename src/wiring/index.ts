/**
 * The wiring: the real edges an AppConfig asks for (capabilities, storage providers, the HTTP surface). The one
 * room that builds effects for the agent.
 */
export {
  agentSettings,
  capabilities,
  configSourceFor,
  type ConfigSourceHooks,
  type ConfigSourceWithStatus,
} from './capabilities';
export { servedSchemes } from './storage';
export { SurfaceBindFailed, withSurface, type AgentRun, type SurfacedCapabilities } from './surface';
