/** applyModelOps: hands ModelOps to the loader and emits what becomes of each model. */
import type { Observable, OperatorFunction } from 'rxjs';
import type { ModelOp } from '../core/model-op';
import type { AgentEvent } from '../core/model-status';

/** The part of the loader this operator needs (src/loader/loader.ts implements it). */
export interface OpRunner {
  readonly run: (op$: Observable<ModelOp>) => Observable<AgentEvent>;
}

/**
 * The loader consumes ops as they come and keeps only the latest wanted state per model, so upstream never waits
 * on a download: backpressure is the loader's bounded workers, not a buffer of ops. Unsubscribing cancels every
 * download in progress and every pending retry.
 */
export const applyModelOps =
  (loader: OpRunner): OperatorFunction<ModelOp, AgentEvent> =>
  (op$) =>
    loader.run(op$);
