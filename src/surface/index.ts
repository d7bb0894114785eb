/** The HTTP surface: /healthz, /readyz, /metrics and /status, answered from memory; KServe's agent port. */
export { descriptorExhaustion, withDescriptors } from './descriptors';
export {
  defaultSurfaceLimits,
  httpSurface,
  isSurfacePath,
  surfacePaths,
  type HttpSurfaceOptions,
  type SurfaceLimits,
  type SurfaceView,
} from './http-surface';
export { createMetrics, type AgentMetrics } from './metrics';
export { statusPages, type StatusPages, type StatusSource } from './status-pages';
export { createSurfaceState, heartbeatMs, type Liveness, type SurfaceState } from './surface-state';
export { agentPortHandler } from './agent-port-handler';
