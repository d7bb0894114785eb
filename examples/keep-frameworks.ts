/** keepFrameworks: an integrator's operator that narrows each accepted snapshot to the listed frameworks. */
import { map, type MonoTypeOperatorFunction } from 'rxjs';
import { snapshotOf, type Snapshot } from 'modelsync';

/**
 * Keeps only the models whose `framework` is one of `frameworks` (a model without a framework is dropped).
 * Splice it between `keepValid` and `toModelOps`: pass it to `startAgent` in `snapshotOperators`.
 *
 * Why snapshots and not ops: `toModelOps` diffs each snapshot against the previous one, so narrowing the
 * snapshots makes "a model left the list" a Remove, whatever the reason it left. Filtering the ops instead is
 * wrong: when `m` changes from `onnx` to `sklearn` with `keepFrameworks(['onnx'])`, the only op is an Add
 * carrying the sklearn spec; dropping it leaves the onnx `m` loaded forever. A Remove carries no spec to filter
 * on, and a model already in place at start-up (`inPlace`) whose framework is not listed gets no op at all
 * unless its config changes, whereas a narrowed first snapshot removes it. A change to an unlisted model leaves
 * the narrowed snapshot equal to the previous one, so it costs no op.
 */
export const keepFrameworks = (frameworks: ReadonlyArray<string>): MonoTypeOperatorFunction<Snapshot> => {
  const kept = new Set(frameworks);
  return map((snapshot) =>
    snapshotOf([...snapshot].filter(([, spec]) => spec.framework !== undefined && kept.has(spec.framework))),
  );
};
