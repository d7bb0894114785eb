/** Slots: a counting semaphore whose waits can be aborted, bounding downloads and load calls across models. */

export interface Slots {
  /**
   * Runs `task` once a slot is free; gives up waiting (rejecting with the abort reason) when `signal` aborts.
   * Without a signal it waits however long it takes, with no listener on anything.
   */
  readonly use: <T>(signal: AbortSignal | undefined, task: () => Promise<T>) => Promise<T>;
  /** Tasks running now. */
  readonly inUse: () => number;
  /** The most tasks that ever ran at once. */
  readonly highWater: () => number;
}

export const createSlots = (capacity: number): Slots => {
  let running = 0;
  let highWater = 0;
  const waiting = new Set<() => void>();

  const acquire = (signal: AbortSignal | undefined): Promise<void> => {
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    if (running < capacity && waiting.size === 0) {
      running++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        waiting.delete(grant);
        reject(signal?.reason as Error);
      };
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort);
        running++;
        resolve();
      };
      waiting.add(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  };

  const release = (): void => {
    running--;
    const next = waiting.values().next();
    if (!next.done) {
      waiting.delete(next.value);
      next.value();
    }
  };

  return {
    use: async (signal, task) => {
      await acquire(signal);
      highWater = Math.max(highWater, running);
      try {
        return await task();
      } finally {
        release();
      }
    },
    inUse: () => running,
    highWater: () => highWater,
  };
};

/** Runs `task` in one of `pool`'s slots (see `Slots.use`), or at once when there is no pool to bound it. */
export const inSlot = <T>(
  pool: Slots | undefined,
  signal: AbortSignal | undefined,
  task: () => Promise<T>,
): Promise<T> => (pool === undefined ? task() : pool.use(signal, task));
