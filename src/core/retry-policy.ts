/** The one retry policy: every retry loop of modelsync draws its waits from `retryDelay` (see docs/architecture.md). */

/**
 * How a wait is drawn below its ceiling: `full` anywhere in [0, ceiling] (AWS architecture blog, "Exponential
 * Backoff And Jitter": the retries of many models that failed together, a restarting model server, do not come back
 * in lockstep); `at-least-base` the same but never under `baseMs` (a peer that fails at once is asked no sooner);
 * `none` the ceiling itself (a timer of its own already paces the retries).
 */
export type Jitter = 'full' | 'at-least-base' | 'none';

/** How a transient failure is retried. */
export interface RetryPolicy {
  /** Attempts in all before the failure stands (1 = no retry); Infinity for a loop that must not give up. */
  readonly maxAttempts: number;
  /** The ceiling of the first retry's wait; it doubles with each retry, up to `maxMs`. */
  readonly baseMs: number;
  readonly maxMs: number;
  /** Default `full`. */
  readonly jitter?: Jitter;
}

/**
 * Tries of one storage request by its own client (S3 SDK, Azure SDK, a GCS list page) before its failure fails
 * the download attempt; why both layers retry: docs/reliability.md, "Retries: where is the retry policy".
 */
export const storageRequestTries = 3;

/** The ceiling of retry number `attempt`'s wait: `baseMs` doubled each retry, capped at `maxMs`. */
const ceilingOf = (attempt: number, baseMs: number, maxMs: number): number =>
  Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));

/** The wait before retry number `attempt` (1 = the first), in whole ms: full jitter below `ceilingOf`. */
export const backoffDelay = (attempt: number, baseMs: number, maxMs: number, random: () => number): number =>
  Math.round(random() * ceilingOf(attempt, baseMs, maxMs));

/** The wait before retry number `attempt` (1 = the first retry) under `policy`; one random draw unless `none`. */
export const retryDelay = (
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number => {
  const { baseMs, maxMs, jitter = 'full' } = policy;
  if (jitter === 'none') return ceilingOf(attempt, baseMs, maxMs);
  const delay = backoffDelay(attempt, baseMs, maxMs, random);
  return jitter === 'at-least-base' ? Math.max(Math.min(baseMs, maxMs), delay) : delay;
};
