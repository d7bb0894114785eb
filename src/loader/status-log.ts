/** How a status change is told: the record's new status, one log line at a level that suits its phase (no secret in it), one event. */
import type { Logger } from 'pino';
import type { SchedulerLike } from 'rxjs';
import {
  nextStatus,
  statusEvent,
  type AgentEvent,
  type ModelPhase,
  type ModelStatus,
} from '../core/model-status';
import { redactUri } from '../core/redact';
import type { ModelSpec } from '../core/model-config';
import type { ModelRecord } from './model-record';

type Level = 'debug' | 'info' | 'warn' | 'error';

const lines: Readonly<Record<ModelPhase, { readonly level: Level; readonly msg: string }>> = {
  // Debug: a burst of 10k models would otherwise log 10k Pending lines at info.
  Pending: { level: 'debug', msg: 'model pending' },
  Downloading: { level: 'info', msg: 'model downloading' },
  Loading: { level: 'info', msg: 'model loading' },
  Loaded: { level: 'info', msg: 'model loaded' },
  Unloading: { level: 'info', msg: 'model unloading' },
  Removed: { level: 'info', msg: 'model removed' },
  Retrying: { level: 'warn', msg: 'model step failed; retrying' },
  Failed: { level: 'error', msg: 'model failed' },
};

/** A lost model's `Loaded` that no load of ours made: the server lists it again. */
const listedAgainLine = { level: 'info', msg: 'model listed again by the model server' } as const;

/**
 * Logs `status` with the model as `model` and the storage URI through `redactUri`: presigned query strings and
 * `user:password@` are credentials. `logFields` (bytes, durations) are added to the line.
 */
export const logStatus = (
  log: Logger,
  // Not the timing and byte figures (for /status and metrics): the line has its own time and `logFields`.
  { modelName, spec, phase, reason, errorKind, attempt, listedAgain }: ModelStatus,
  logFields: Readonly<Record<string, number>> = {},
): void => {
  const { level, msg } = listedAgain === true ? listedAgainLine : lines[phase];
  log[level](
    {
      model: modelName,
      phase,
      // pino leaves out the fields that are undefined.
      reason,
      errorKind,
      attempt,
      ...(spec ? { storageUri: redactUri(spec.storageUri) } : {}),
      ...logFields,
    },
    msg,
  );
};

/** Sets a model's status, logs it and emits it; `logFields` go on the log line only. */
export type ReportStatus = (
  record: ModelRecord,
  phase: ModelPhase,
  spec: ModelSpec | undefined,
  details?: Pick<ModelStatus, 'reason' | 'errorKind' | 'attempt' | 'filesFrom' | 'listedAgain'>,
  logFields?: Readonly<Record<string, number>>,
) => void;

/** A reporter timed on `scheduler` that emits to `events`; silent once `stop` is aborted. */
export const statusReporter =
  (
    log: Logger,
    scheduler: SchedulerLike,
    stop: AbortSignal,
    events: { next: (event: AgentEvent) => void },
  ): ReportStatus =>
  (record, phase, spec, details = {}, logFields = {}) => {
    if (stop.aborted) return; // aborted work winding down has nothing to tell
    record.status = nextStatus(record.status, phase, spec, details, scheduler.now());
    record.reported = true;
    record.lost = undefined; // a new status of the model is no longer the loss (showLost sets it after)
    logStatus(log, record.status, logFields);
    events.next(statusEvent(record.status));
  };
