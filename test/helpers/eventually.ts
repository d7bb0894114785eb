/** eventually: polls a check that may throw meanwhile (a server still starting), failing with what it waited for. */
import { sleep } from '../../src/testing/wait';

/**
 * Resolves once `check` resolves true, trying every 100 ms (a throw counts as not yet); after `timeoutMs` rejects
 * with `what`, the last error and `context()` (the agent's last lines, say).
 */
export const eventually = async (
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
  context: () => string = () => '',
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what} not within ${timeoutMs} ms (last: ${String(last)})\n${context()}`, {
        cause: last,
      });
    await sleep(100);
  }
};
