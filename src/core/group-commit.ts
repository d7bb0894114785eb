/** groupCommit: one run of an action shared by every caller that asks while another run is under way. */

/**
 * Wraps `run` (an fsync, say) so that every call gets a run that started after the call, while calls arriving
 * during a run share the single run queued after it: a burst of N calls costs two runs, not N. A failed run
 * rejects the calls it served; the next call starts afresh.
 */
export const groupCommit = (run: () => Promise<void>): (() => Promise<void>) => {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const current: Promise<void> = run().finally(() => {
      if (running === current) running = undefined;
    });
    running = current;
    return current;
  };
  return () => {
    if (queued !== undefined) return queued;
    if (running === undefined) return start();
    queued = running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
};
