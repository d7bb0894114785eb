/** Counts what fs/promises' handles do while a step runs: the most held open at once, and the fsyncs made. */
import fsPromises from 'node:fs/promises';

export interface HandleCounts<T> {
  readonly result: T;
  /** The most handles held open at once while `run` ran. */
  readonly mostHeld: number;
  /** The `sync()` calls made on them. */
  readonly syncs: number;
}

/** Runs `run` with every `fs/promises` open counted (the spy removed after, however `run` ends). */
export const countingHandles = async <T>(run: () => Promise<T>): Promise<HandleCounts<T>> => {
  const open = fsPromises.open as (...args: unknown[]) => Promise<fsPromises.FileHandle>;
  let [held, mostHeld, syncs] = [0, 0, 0];
  const counting = jest.spyOn(fsPromises, 'open').mockImplementation(async (...args: unknown[]) => {
    const handle = await open(...args);
    mostHeld = Math.max(mostHeld, ++held);
    const [close, sync] = [handle.close.bind(handle), handle.sync.bind(handle)];
    handle.close = () => (held--, close());
    handle.sync = () => (syncs++, sync());
    return handle;
  });
  try {
    const result = await run();
    return { result, mostHeld, syncs };
  } finally {
    counting.mockRestore();
  }
};
