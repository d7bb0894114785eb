/** untilAborted: a wait that an AbortSignal ends early, leaving no listener on the signal once it settles. */

/**
 * Settles as `work` does, or rejects with `signal`'s reason once it aborts first (an AbortError unless whoever aborted
 * chose another). One listener per wait, removed when it settles: racing many waits against one long-lived abort
 * promise would keep each one's value reachable from that promise until the signal ends.
 */
export const untilAborted = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
