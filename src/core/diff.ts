/** diff: the ops that turn one snapshot into the next. Pure, deterministic, and the only place ops are made. */
import type { ModelName } from './model-name';
import { add, remove, type ModelOp } from './model-op';
import { specEquals, type Snapshot } from './snapshot';

/**
 * Removes of models no longer listed, then Adds of new models and of models whose spec changed, each group
 * sorted by name (`sort`'s default order). A changed spec is a single Add carrying the new spec: the loader
 * replaces the model without unloading it first (KServe's Remove+Add forced downtime, and its tracker kept
 * the old spec). A spec carried over as the very same object is no change, `unknownSpec` included (`installedInForce`).
 */
export const diff = (previous: Snapshot, next: Snapshot, onStartup = false): ReadonlyArray<ModelOp> => {
  // forEach, not for-of: an iterator result (and an entry array) per model is garbage at each change, 20,000 models
  // ~1 MB, while the young generation is 1 MiB (node-flags.ts): a collection at nearly every swap.
  const removed: ModelName[] = [];
  previous.forEach((_, name) => {
    if (!next.has(name)) removed.push(name);
  });
  const added: ModelName[] = [];
  next.forEach((spec, name) => {
    const before = previous.get(name);
    if (before === undefined || (before !== spec && !specEquals(before, spec))) added.push(name);
  });
  return [
    ...removed.sort().map(remove),
    ...added.sort().map((name) => add(name, next.get(name)!, onStartup)),
  ];
};

/** The snapshot reached by applying `ops` to `snapshot` (the loader's view; used to check diff). */
export const applyOps = (snapshot: Snapshot, ops: ReadonlyArray<ModelOp>): Snapshot => {
  const result = new Map(snapshot);
  for (const op of ops) {
    if (op._tag === 'Add') result.set(op.modelName, op.spec);
    else result.delete(op.modelName);
  }
  return result;
};
