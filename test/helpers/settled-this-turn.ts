/**
 * Whether `call` settled within the microtasks of this turn: a file-system call made inline has, one through libuv's
 * pool has not (its answer comes back on a later turn of the event loop).
 */
export const settledThisTurn = async (call: () => Promise<unknown>): Promise<boolean> => {
  let settled = false;
  const running = call().then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 10; i++) await Promise.resolve();
  const now = settled;
  await running;
  return now;
};
