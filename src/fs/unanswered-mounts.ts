/**
 * The mounts found not answering whose question has not returned: each holds one of libuv's threads in a call that
 * never returns, and a Node.js process cannot exit while one does (it joins its threads on exit: `process.exit`
 * waits for good). Process-wide, as the threads are; the process entry reads it to leave another way.
 */
const unanswered = new Map<string, number>();

/** Counts `dir` as not answering until the returned release is called (once the question returns). */
export const holdUnanswered = (dir: string): (() => void) => {
  unanswered.set(dir, (unanswered.get(dir) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (unanswered.get(dir) ?? 1) - 1;
    if (left > 0) unanswered.set(dir, left);
    else unanswered.delete(dir);
  };
};

/** The dirs whose mount has not answered (and holds a thread) now, sorted. */
export const unansweredMounts = (): ReadonlyArray<string> => [...unanswered.keys()].sort();
