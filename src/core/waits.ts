/** waits: a wait that ends early — when an AbortSignal aborts, or when a deadline passes (a hung mount never answers). */

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

/**
 * Settles as `work` does, or as `onLate` says (its value, or what it throws) once `ms` have passed first; the timer is
 * cleared either way. `work` itself goes on: whoever started it decides what its late end does.
 */
export const within = <T>(work: Promise<T>, ms: number, onLate: () => T): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  // onLate runs in the timer's own turn (a Promise executor runs at once): its value, or a rejection with its throw.
  const late = new Promise<T>(
    (resolve) => (timer = setTimeout(() => resolve(new Promise<T>((settle) => settle(onLate()))), ms)),
  );
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
};
