/**
 * The one-stream rule of fetchInParts: a first connection fast enough on its own fetches the whole file, where more
 * connections would only cost CPU and disk.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** A first connection that writes `bytes` of its range within `withinMs` is enough on its own. */
export interface OneStreamRule {
  readonly bytes: number;
  readonly withinMs: number;
}

/**
 * 6 MiB in 60 ms (105 MB/s): a connection this fast is not held back by a per-connection cap, and more connections
 * would only cost CPU and disk (1 GiB over loopback through undici on 2 cores: 8 connections 2.77-3.51 s, one
 * 2.00-2.43 s, issue 28). One loopback connection writes 7.5-12.5 MiB in its first 60 ms, one through a 40 MB/s relay
 * 2.5 MiB, a cloud store's less. The wait costs a capped download about 30 ms (leaderIsEnough).
 */
export const defaultOneStreamRule: OneStreamRule = { bytes: 6 * 2 ** 20, withinMs: 60 };

/**
 * True when the leader, still at work, wrote `rule.bytes` within `rule.withinMs`; false at the end of the window, or
 * at its half with the leader under half the rule's rate (through a 40 MB/s relay the others then open at 30-33 ms).
 */
export const leaderIsEnough = async (
  leader: Promise<void>,
  written: { readonly bytes: number },
  rule: OneStreamRule,
  signal: AbortSignal,
  now: () => number,
): Promise<boolean> => {
  const started = now();
  let done = false;
  void leader.finally(() => (done = true));
  // Polled: a few wake-ups at most, where a hook in every write would cost each byte of every file.
  const pollMs = Math.max(1, Math.min(5, rule.withinMs / 10));
  for (;;) {
    if (done || signal.aborted) return false;
    if (written.bytes >= rule.bytes) return true;
    const elapsedMs = now() - started;
    if (elapsedMs >= rule.withinMs) return false;
    if (elapsedMs >= rule.withinMs / 2 && written.bytes / elapsedMs < rule.bytes / rule.withinMs / 2)
      return false;
    await sleep(pollMs);
  }
};
