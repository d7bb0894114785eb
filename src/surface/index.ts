/** The HTTP surface: /healthz, /readyz, /metrics and /status, answered from memory. */
export { httpSurface, surfacePaths, type HttpSurfaceOptions, type SurfaceView } from './http-surface';
export { createMetrics, type AgentMetrics } from './metrics';
export { createSurfaceState, heartbeatMs, type Liveness, type SurfaceState } from './surface-state';
