/** ModelStatus: where one model stands, as the loader reports it (logs now; status endpoints and metrics later). */
import type { ModelName } from './model-name';
import type { ModelSpec } from './model-config';

/**
 * Pending → Downloading → Loading → Loaded, or Unloading → Removed; Retrying while a transient failure waits out
 * its backoff; Failed when a permanent failure (or too many transient ones) stopped it until the next spec change
 * or resync.
 */
export type ModelPhase =
  'Pending' | 'Downloading' | 'Loading' | 'Loaded' | 'Unloading' | 'Removed' | 'Retrying' | 'Failed';

export interface ModelStatus {
  readonly modelName: ModelName;
  readonly phase: ModelPhase;
  /** The spec being worked towards (undefined while removing). */
  readonly spec?: ModelSpec;
  /** Why it is Retrying or Failed. */
  readonly reason?: string;
  /** Attempts of the current step so far (Retrying, Failed). */
  readonly attempt?: number;
}

/** What the agent's stream emits: every status change, and once, that the start-up sync has finished. */
export type AgentEvent =
  | { readonly _tag: 'Status'; readonly status: ModelStatus }
  | { readonly _tag: 'Ready'; readonly modelCount: number };

export const statusEvent = (status: ModelStatus): AgentEvent => ({ _tag: 'Status', status });
export const readyEvent = (modelCount: number): AgentEvent => ({ _tag: 'Ready', modelCount });
