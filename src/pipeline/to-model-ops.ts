/** toModelOps: pairs each accepted snapshot with the one before it and emits the ops between them. */
import { concatMap, pairwise, startWith, type OperatorFunction } from 'rxjs';
import { diff } from '../core/diff';
import type { ModelOp } from '../core/model-op';
import type { Snapshot } from '../core/snapshot';

/**
 * `inPlace` is what is already in place when modelsync starts (`inPlaceSnapshot`: recovered from the model dir
 * and the server), so a restart does not redo finished work. The ops of the first snapshot are marked `onStartup`.
 */
export const toModelOps =
  (inPlace: Snapshot): OperatorFunction<Snapshot, ModelOp> =>
  (snapshot$) =>
    snapshot$.pipe(
      startWith(inPlace),
      pairwise(),
      concatMap(([previous, next], index) => diff(previous, next, index === 0)),
    );
