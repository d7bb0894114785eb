/** The HTTP surface: /healthz, /readyz, /metrics and /status, answered from memory; KServe's agent port. */
export { defaultSurfaceLimits, httpSurface } from './http-surface';
export { createMetrics } from './metrics';
export { statusPages } from './status-pages';
export { createSurfaceState, heartbeatMs, recheckMs, withDescriptors } from './surface-state';
export { agentPortHandler } from './agent-port-handler';
export { kubeEventRecorder, type KubeEventsWriterOf } from './kube-event-recorder';
