/**
 * modelTransfer: one model's download over many streams at once (the objects of a bucket, the files of a Hub repo):
 * one guard for all of them, one signal that the first failure or a rate below the minimum stops, and what stopped it.
 */
import { setMaxListeners } from 'node:events';
import { retryableError, toEffectError, type EffectError } from '../core/errors';
import type { DownloadLimits } from './download-limits';
import { modelGuard, type TransferGuard } from './transfer-guard';

/** The shared state of one model's streams. */
export interface ModelTransfer {
  /** Every byte of every stream passes it (the model cap, the minimum rate, the disk check). */
  readonly guard: TransferGuard;
  /** The caller's signal, aborted also by `stop`: every stream of the model runs on it. */
  readonly signal: AbortSignal;
  /** Stops every stream, to fail with `error` (the first failure wins). */
  readonly stop: (error: EffectError) => void;
  /** What the download fails with, given its catch's `cause`: `aborted`, else the error it was stopped with. */
  readonly failure: (cause: unknown) => EffectError;
}

/**
 * The transfer of the model `what` into `targetDir` under `limits`, on `signal`; `listeners` is how many abort
 * listeners its streams may add at once (more than Node's warning level of 10).
 */
export const modelTransfer = (
  what: string,
  targetDir: string,
  limits: DownloadLimits,
  signal: AbortSignal,
  listeners: number,
): ModelTransfer => {
  const controller = new AbortController();
  let stoppedBy: EffectError | undefined;
  const stop = (error: EffectError): void => {
    stoppedBy ??= error;
    controller.abort(error);
  };
  const guard = modelGuard(what, targetDir, limits, stop);
  const combined = AbortSignal.any([signal, controller.signal]);
  setMaxListeners(8 + listeners, combined);
  const failure = (cause: unknown): EffectError => {
    if (signal.aborted) return retryableError('aborted', `${what}: aborted`, signal.reason);
    return stoppedBy ?? toEffectError(cause);
  };
  return { guard, signal: combined, stop, failure };
};
