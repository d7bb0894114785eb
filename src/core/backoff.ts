/** backoffDelay: capped exponential backoff with full jitter, for retrying transient failures. */

/**
 * The wait before retry number `attempt` (1 = the first retry): a random point in [0, min(max, base·2^(attempt-1))].
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter") spreads the retries of many models that
 * failed together (a restarting model server) instead of sending them back in lockstep.
 */
export const backoffDelay = (
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number => {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(random() * ceiling);
};
