/**
 * The pipeline's operators, one per file, each marble-tested: config events to snapshots to ModelOps. Effects come
 * in as parameters.
 */
export { applyModelOps, type OpRunner } from './apply-model-ops';
export { type BurstPacing, coalesceBursts } from './coalesce-bursts';
export { decodeAndReport } from './decode-and-report';
export { decodeSnapshot } from './decode-snapshot';
export { keepValid } from './keep-valid';
export { readConfig } from './read-config';
export { type DriftRecords, repairDrift, type ResyncTrigger } from './repair-drift';
export { type ResyncTriggerOptions, resyncTriggers } from './resync-triggers';
export { announcesNewContent, isSwapStep, selectConfigEvents } from './select-config-events';
export { skipUnchangedReads } from './skip-unchanged-reads';
export { toModelOps } from './to-model-ops';
export { logUnservedModels, warnUnservedSchemes } from './warn-unserved-schemes';
