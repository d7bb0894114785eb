/** ModelRecord: what the loader knows and wants of one model, and how an op changes what it wants (coalescing). */
import type { ModelSpec } from '../core/model-config';
import type { ModelName } from '../core/model-name';
import type { ModelOp } from '../core/model-op';
import type { ModelPhase, ModelStatus } from '../core/model-status';
import { specEquals, unknownSpec } from '../core/snapshot';
import { isInPlace, type ModelState } from './reconcile';

/** One model: what is in place (ModelState), what is wanted, and how the work towards it stands. */
export interface ModelRecord extends ModelState {
  /** The spec wanted, or undefined when the model should be gone. */
  desired: ModelSpec | undefined;
  status: ModelStatus;
  /** Whether a status of this model was ever emitted (a model nothing was said about needs no `Removed`). */
  reported: boolean;
  /** Consecutive failed attempts towards the current desired state. */
  attempts: number;
  /** Its desired state Failed because the server refused to load its files for good (see DesiredState). */
  rejected: boolean;
  /**
   * The work towards the current desired state, aborted when a newer one supersedes it: its download stops, its
   * failures do not count. Made when an attempt begins and dropped when it ends (idle, 1,000 records held 1,000
   * controllers, signals and their dependants' sets: ~0.35 MiB).
   */
  generation: AbortController | undefined;
  /** The last work begun on this model; a new subscription waits for work an old one is still aborting. */
  inFlight: Promise<void>;
  /** Loaded, but the server lost it and drift repair's reload waits (shown Retrying); ended by the next status. */
  lost?: boolean;
}

/**
 * A record for a model seen for the first time (`desired` undefined until an op says), or for one found at start,
 * with `desired` as the in-place snapshot says: its spec when it is in place (Loaded), `unknownSpec` when it is
 * half in place, so whichever op the first diff sends for it is a change.
 */
export const newRecord = (
  name: ModelName,
  desired?: ModelSpec,
  onDisk?: ModelSpec,
  loaded = false,
): ModelRecord => {
  const inPlaceSpec = desired !== unknownSpec ? desired : undefined;
  return {
    name,
    desired,
    onDisk,
    loaded,
    loadedSpec: inPlaceSpec,
    status: inPlaceSpec
      ? { modelName: name, phase: 'Loaded', spec: inPlaceSpec }
      : { modelName: name, phase: 'Pending' },
    reported: false,
    attempts: 0,
    rejected: false,
    generation: undefined,
    inFlight: Promise.resolve(),
  };
};

/** Aborts the record's `generation`, if an attempt is under way. */
export const abortGeneration = (record: ModelRecord, reason: string): void => {
  record.generation?.abort(new Error(reason));
  record.generation = undefined;
};

/** The record `op` is about (made for an Add of a model never seen) if it needs work once `want` recorded it. */
export const recordToWorkOn = (
  records: Map<ModelName, ModelRecord>,
  op: ModelOp,
  settled: (name: ModelName) => boolean,
): ModelRecord | undefined => {
  const desired = op._tag === 'Add' ? op.spec : undefined;
  const known = records.get(op.modelName);
  if (known === undefined && desired === undefined) return undefined; // a Remove of a model never seen
  const record = known ?? records.set(op.modelName, newRecord(op.modelName)).get(op.modelName)!;
  return want(record, desired, settled(op.modelName)) ? record : undefined;
};

const sameDesired = (a: ModelSpec | undefined, b: ModelSpec | undefined): boolean =>
  a === undefined || b === undefined ? a === b : specEquals(a, b);

/**
 * Records that `desired` is wanted; true when the model needs work for it. Ops only record desired state, so ops
 * not yet worked on collapse into the latest: Add then Remove is nothing, the same spec again is nothing, except
 * that the same desired state on a Failed model, or on a `settled` one (no work queued, running or waiting) that
 * is no longer in place (the server lost it: drift repair), is worked on once more.
 */
export const want = (record: ModelRecord, desired: ModelSpec | undefined, settled = false): boolean => {
  if (sameDesired(record.desired, desired)) {
    const drifted = settled && !isInPlace(record, desired);
    if (record.status.phase !== 'Failed' && !drifted) return false;
  } else {
    // A record never worked on has no work to supersede (and 10k new models need no 10k aborts).
    const workedOn = record.reported || record.desired !== undefined;
    record.desired = desired;
    if (workedOn) abortGeneration(record, 'superseded by a newer desired state');
  }
  record.attempts = 0;
  record.rejected = false;
  return true;
};

/** Whether a new subscription takes the model up: an op asked for a state that is not reached, and it has not Failed. */
export const needsWork = (record: ModelRecord): boolean =>
  record.desired !== unknownSpec && record.status.phase !== 'Failed' && !isInPlace(record, record.desired);

/** The step a model was in when it failed, by the phase it last reported (checking its files counts as download). */
export const failedStep = (phase: ModelPhase): 'download' | 'load' | 'unload' =>
  phase === 'Loading' ? 'load' : phase === 'Unloading' ? 'unload' : 'download';
