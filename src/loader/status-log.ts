/** logStatus: one log line per status change, at a level that suits its phase, with no secret in it. */
import type { Logger } from 'pino';
import type { ModelPhase, ModelStatus } from '../core/model-status';
import { redactUri } from '../core/redact';

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

/**
 * Logs `status` with the model as `model` and the storage URI through `redactUri`: presigned query strings and
 * `user:password@` are credentials. `logFields` (bytes, durations) are added to the line.
 */
export const logStatus = (
  log: Logger,
  // Not the timing and byte figures (for /status and metrics): the line has its own time and `logFields`.
  { modelName, spec, phase, reason, errorKind, attempt }: ModelStatus,
  logFields: Readonly<Record<string, number>> = {},
): void => {
  const { level, msg } = lines[phase];
  log[level](
    {
      model: modelName,
      phase,
      ...(reason !== undefined ? { reason } : {}),
      ...(errorKind !== undefined ? { errorKind } : {}),
      ...(attempt !== undefined ? { attempt } : {}),
      ...(spec ? { storageUri: redactUri(spec.storageUri) } : {}),
      ...logFields,
    },
    msg,
  );
};
