/** ModelStatus: where one model stands, as the loader reports it (logs, the agent's events, status endpoints, metrics). */
import type { EffectErrorKind } from './errors';
import type { ModelName } from './model-name';
import type { ModelSpec } from './model-config';
import { specEquals } from './snapshot';

/**
 * The phases of one model, as the loader reports them:
 * - `Pending`: its desired state changed (or a Failed model was submitted again) and it waits for a free worker;
 *   reported only when no worker takes it at once, so a burst of 10k models reports Pending for those that wait;
 * - `Downloading` → `Loading` → `Loaded`: bringing a spec in (a step already done is skipped: a spec on disk is not
 *   downloaded again, a loaded one is not loaded again);
 * - `Unloading` → `Removed`: taking a model out;
 * - `Retrying`: a step failed with a transient error and the model waits out its backoff (no worker is held);
 * - `Failed`: a permanent error, or too many transient ones: nothing more happens until its spec changes or the
 *   same spec is submitted again (a resync).
 */
export type ModelPhase =
  'Pending' | 'Downloading' | 'Loading' | 'Loaded' | 'Unloading' | 'Removed' | 'Retrying' | 'Failed';

/**
 * Where a model's files came from: downloaded from its storage, filled from the node cache (`--node-cache-dir`), or
 * filled from the dir of another model of the same content in this pod.
 */
export type FilesOrigin = 'storage' | 'node-cache' | 'model';

export interface ModelStatus {
  readonly modelName: ModelName;
  readonly phase: ModelPhase;
  /** The spec being worked towards (undefined while removing). */
  readonly spec?: ModelSpec;
  /** Why it is Retrying or Failed, in words. */
  readonly reason?: string;
  /** What kind of failure made it Retrying or Failed (EffectError.kind), for metrics and status endpoints. */
  readonly errorKind?: EffectErrorKind;
  /** Attempts of the current step so far (Retrying, Failed). */
  readonly attempt?: number;
  /** When it entered this phase (ms since the epoch, on the loader's scheduler); absent for what was in place at start. */
  readonly since?: number;
  /** How long the phase before this one lasted, in ms (a `Loaded` status: its `Loading`, slot wait included). */
  readonly durationMs?: number;
  /** Bytes of the current spec's download so far (updated at the download progress pace, and when it ends). */
  readonly bytesDownloaded?: number;
  /** The bytes the download moves in all, when the storage said so up front. */
  readonly bytesTotal?: number;
  /** Where the current spec's files came from, once they are in (Loading on); absent for files already on disk. */
  readonly filesFrom?: FilesOrigin;
  /**
   * A `Loaded` that no load of modelsync's made: the server lists again a model it had lost (shown Retrying while
   * its reload waited). Told as such: no "model loaded" line, no ModelLoaded Event.
   */
  readonly listedAgain?: true;
}

const keepsDownloadFigures: ReadonlySet<ModelPhase> = new Set(['Loading', 'Loaded', 'Retrying', 'Failed']);

/**
 * The status a model enters `phase` with at `now`, after `previous`: timed from `previous.since`, and keeping the
 * download's figures while the same spec goes on to load (or fails). Another spec's figures are not its own: a
 * spec changed back while the other downloaded was reported Loaded with that download's bytes, cut short.
 */
export const nextStatus = (
  previous: ModelStatus,
  phase: ModelPhase,
  spec: ModelSpec | undefined,
  details: Pick<ModelStatus, 'reason' | 'errorKind' | 'attempt' | 'filesFrom' | 'listedAgain'>,
  now: number,
): ModelStatus => {
  const keeps =
    keepsDownloadFigures.has(phase) &&
    spec !== undefined &&
    previous.spec !== undefined &&
    specEquals(previous.spec, spec);
  return {
    modelName: previous.modelName,
    phase,
    ...(spec ? { spec } : {}),
    ...details,
    since: now,
    ...(previous.since !== undefined ? { durationMs: now - previous.since } : {}),
    ...(keeps && previous.bytesDownloaded !== undefined
      ? { bytesDownloaded: previous.bytesDownloaded, bytesTotal: previous.bytesTotal }
      : {}),
    ...(keeps && details.filesFrom === undefined && previous.filesFrom !== undefined
      ? { filesFrom: previous.filesFrom }
      : {}),
  };
};

/** What the agent's stream emits: every status change, and once, that the start-up sync has finished. */
export type AgentEvent =
  | { readonly _tag: 'Status'; readonly status: ModelStatus }
  | { readonly _tag: 'Ready'; readonly modelCount: number };

/** A status change as an agent event. */
export const statusEvent = (status: ModelStatus): AgentEvent => ({ _tag: 'Status', status });
/** The start-up sync has finished, with the number of models the accepted config lists. */
export const readyEvent = (modelCount: number): AgentEvent => ({ _tag: 'Ready', modelCount });
