/** idleWatch: a deadline on each wait for the next bytes of a body, for clients whose SDK has none that works. */

/** Waits timed by one idleWatch. */
export interface IdleWatch {
  /** `next`, with the deadline running until it settles; on expiry `onIdle` runs (it should end the body). */
  wait<T>(next: Promise<T>): Promise<T>;
  /** True once a wait expired. */
  readonly fired: boolean;
}

/**
 * A deadline of `ms` on each wait for a body's next chunk; the time the consumer spends between chunks (writing
 * to disk) does not count. On expiry `onIdle` runs once: it must make the pending wait fail (destroy the stream).
 */
export const idleWatch = (ms: number, onIdle: () => void): IdleWatch => {
  let fired = false;
  return {
    get fired() {
      return fired;
    },
    wait: async (next) => {
      const timer = setTimeout(() => {
        fired = true;
        onIdle();
      }, ms);
      try {
        return await next;
      } finally {
        clearTimeout(timer);
      }
    },
  };
};
