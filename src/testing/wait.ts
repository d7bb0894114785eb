/** Waiting in tests: a pause, a poll until a condition holds, a deadline on a promise, and delays a close can end. */

/** What a wait is for, in its timeout message; a function is asked only when the wait times out. */
export type WaitingFor = string | (() => string);

const textOf = (what: WaitingFor): string => (typeof what === 'string' ? what : what());

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once `condition()` is true (or resolves true), checking it at once and then every few milliseconds;
 * rejects with "timed out after `timeoutMs` ms waiting for `what`" when it is still false at the deadline, or a
 * check has not settled by then (one that hangs, say a request to a stopped server; a check started just before the
 * deadline gets a second), and with the condition's own error when it throws.
 */
export const waitFor = async (
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what: WaitingFor = 'a condition',
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  const timedOut = (): Error => new Error(`timed out after ${timeoutMs} ms waiting for ${textOf(what)}`);
  for (;;) {
    const check = condition();
    const held =
      typeof check === 'boolean' ? check : await settledBy(check, checkTimeMs(deadline, timeoutMs), timedOut);
    if (held) return;
    if (Date.now() > deadline) throw timedOut();
    await sleep(5);
  }
};

/**
 * How long a check started now may take: until the deadline, and at least a second (or the whole wait, when shorter),
 * so that a check started just before the deadline on a busy machine can still see the condition hold.
 */
const checkTimeMs = (deadline: number, timeoutMs: number): number =>
  Math.max(deadline - Date.now(), Math.min(timeoutMs, 1_000));

/** What `promise` settles with, or a rejection with `timedOut()` when it has not settled within `ms`. */
const settledBy = <T>(promise: Promise<T>, ms: number, timedOut: () => Error): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timedOut()), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });

/** `promise`, or a rejection saying what it waited for when it takes longer than `timeoutMs`. */
export const withTimeout = <T>(promise: Promise<T>, timeoutMs: number, what: WaitingFor): Promise<T> =>
  settledBy(
    promise,
    timeoutMs,
    () => new Error(`timed out after ${timeoutMs} ms waiting for ${textOf(what)}`),
  );

/** Delays that `endAll` cuts short, so a stand-in's close leaves no timer behind. */
export interface EndableDelays {
  /** Resolves after `ms` milliseconds, or at once when `endAll` is called before. */
  delay(ms: number): Promise<void>;
  /** Resolves every delay still running now. */
  endAll(): void;
}

/** A set of delays a server can end all at once when it closes. */
export const endableDelays = (): EndableDelays => {
  const running = new Set<() => void>();
  return {
    delay: (ms) =>
      new Promise((resolve) => {
        const end = (): void => {
          clearTimeout(timer);
          running.delete(end);
          resolve();
        };
        const timer = setTimeout(end, ms);
        running.add(end);
      }),
    endAll: () => {
      for (const end of [...running]) end();
    },
  };
};
