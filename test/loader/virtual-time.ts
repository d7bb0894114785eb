/** Virtual time for tests of timed code: a VirtualTimeScheduler moved on by hand. */
import type { VirtualTimeScheduler } from 'rxjs';

/** Moves virtual time on by `ms`, running what comes due (a no-op action pins the clock at the end). */
export const advance = (scheduler: VirtualTimeScheduler, ms: number): void => {
  const to = scheduler.now() + ms;
  scheduler.schedule(() => undefined, ms);
  scheduler.maxFrames = to;
  scheduler.flush();
};
