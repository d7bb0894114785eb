/** attemptOnce: one attempt at a model's desired state, and where a failure leads: a retry later, or Failed. */
import { retryDelay, type RetryPolicy } from '../core/retry-policy';
import { toEffectError, type EffectError } from '../core/errors';
import { isGatekeeperStatus } from '../core/gatekeeper-status';
import type { ModelName } from '../core/model-name';
import { redact, redactUri } from '../core/redact';
import type { Telemetry } from '../ports';
import { failedStep, type ModelRecord } from './model-record';
import { isInPlace, reconcile, type ReconcileEffects } from './reconcile';
import type { ReportStatus } from './status-log';

export interface AttemptContext {
  /** The loader's records: a model that ends with nothing in place and nothing wanted leaves them. */
  readonly records: Map<ModelName, ModelRecord>;
  readonly report: ReportStatus;
  readonly retry: RetryPolicy;
  readonly random: () => number;
  readonly telemetry: Telemetry;
  /** The run's stop: its abort is no failure of the model. */
  readonly stop: AbortSignal;
  /** The run's drain (a graceful shutdown): loads and unloads not sent yet are dropped. */
  readonly drain: AbortSignal;
  /** Queues the model again after `delayMs`, holding no worker meanwhile. */
  readonly retryAfter: (name: ModelName, delayMs: number) => void;
}

/** The HTTP status of a failure, for its log line (a failure is one line: kind, status, message). */
const statusOf = (error: EffectError): Readonly<Record<string, number>> =>
  error.status === undefined ? {} : { status: error.status };

/** Logs the failure of a load or unload whose desired state was superseded while the call was in flight. */
const superseded = (
  { log }: ReconcileEffects,
  record: ModelRecord,
  step: 'load' | 'unload',
  error: EffectError,
): void => {
  const { spec } = record.status;
  log.warn(
    {
      model: record.name,
      step,
      reason: redact(error.message),
      errorKind: error.kind,
      ...statusOf(error),
      ...(spec ? { storageUri: redactUri(spec.storageUri) } : {}),
    },
    `model ${step} failed after a newer desired state superseded it; working on the newer one`,
  );
};

/** Works once towards the record's desired state; a transient failure comes back through `retryAfter`. */
export const attemptOnce = async (
  record: ModelRecord,
  effects: ReconcileEffects,
  { records, report, retry, random, telemetry, stop, drain, retryAfter }: AttemptContext,
): Promise<void> => {
  if (drain.aborted) return; // queued before the drain, behind earlier work on the model: no more work is taken up
  const { desired } = record;
  if (desired === undefined && isInPlace(record, undefined)) {
    // Nothing was ever installed (added and removed before any work): close what was reported, if anything.
    if (record.reported) report(record, 'Removed', undefined);
    records.delete(record.name);
    return;
  }
  const generation = (record.generation ??= new AbortController());
  try {
    await reconcile(record, desired, effects, { stop, supersede: generation.signal, drain });
    record.attempts = 0;
    if (record.desired === undefined && isInPlace(record, undefined)) records.delete(record.name);
  } catch (cause) {
    if (stop.aborted) return; // our own abort, not the model's failure
    if (generation.signal.aborted) {
      // Not the model's failure either, but a load or unload sent before a newer desired state came failed on its
      // own (a timeout, the server's refusal): said once, or the log goes from `model loading` to the next state's
      // work with no word of what became of the call the server may still be busy with. (A drain aborts every
      // generation: a shutdown is no newer desired state.)
      const step = failedStep(record.status.phase);
      if (cause !== generation.signal.reason && step !== 'download' && !drain.aborted)
        superseded(effects, record, step, toEffectError(cause));
      return;
    }
    const error = toEffectError(cause);
    record.attempts++;
    const details = { reason: redact(error.message), errorKind: error.kind, attempt: record.attempts };
    if (!error.retryable || record.attempts >= retry.maxAttempts) {
      // The server refused these files for good: retrying them (a resync) cannot change its answer. A load step's
      // own disk (the journal on a read-only or full model dir) is no answer of the server, nor is a redirect or
      // a demand for credentials (of a proxy before it), nor a setting of modelsync's read at the call (a TorchServe
      // key file without its key, `not-found`; a token with a stray character, `invalid-setting`): the resync
      // retries them. Only the server's answer (`http-status`)
      // and the client's own check of the name (`refused`: one the server cannot take, or its files name otherwise)
      // are about the files.
      record.rejected =
        !error.retryable &&
        (error.kind === 'http-status' || error.kind === 'refused') &&
        !isGatekeeperStatus(error.status) &&
        failedStep(record.status.phase) === 'load';
      return report(record, 'Failed', desired, details, statusOf(error));
    }
    telemetry.retry(failedStep(record.status.phase));
    report(record, 'Retrying', desired, details, statusOf(error));
    // Never sooner than a server's Retry-After asked (a store pushing back), within the policy's longest wait.
    const asked = Math.min(error.retryAfterMs ?? 0, retry.maxMs);
    retryAfter(record.name, Math.max(asked, retryDelay(retry, record.attempts, random)));
  } finally {
    if (record.generation === generation) record.generation = undefined; // a newer one stays for its own work
  }
};
