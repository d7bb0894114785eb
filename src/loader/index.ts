/**
 * The loader: the keyed work queue that applies ModelOps (per-model order, bounded workers, ops collapsed into
 * desired states, never buffered) and the per-model steps it runs.
 */
export { createLoader, type Loader, type LoaderDeps } from './loader';
export { createWorkQueue, type WorkQueue, type WorkQueueCounts } from './work-queue';
export { guardedTelemetry } from './guarded-telemetry';
