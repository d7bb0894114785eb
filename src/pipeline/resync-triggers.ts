/** resyncTriggers: when to resync — every interval, and at once on a signal (SIGHUP). */
import { asyncScheduler, EMPTY, interval, map, merge, type Observable, type SchedulerLike } from 'rxjs';
import type { ResyncTrigger } from './repair-drift';

/** How often to resync, and what asks for one now. */
export interface ResyncTriggerOptions {
  /** 0: no timer, only `signal$`. */
  readonly intervalMs: number;
  /** Each emission asks for a resync now (the CLI feeds it SIGHUP). */
  readonly signal$: Observable<unknown>;
}

/**
 * `timer` every `intervalMs` and `signal` on each emission of `signal$`, for as long as subscribed. A signal does
 * not restart the timer: the interval bounds how stale the state may get, whatever an operator does.
 */
export const resyncTriggers = (
  { intervalMs, signal$ }: ResyncTriggerOptions,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<ResyncTrigger> =>
  merge(
    intervalMs > 0 ? interval(intervalMs, scheduler).pipe(map((): ResyncTrigger => 'timer')) : EMPTY,
    signal$.pipe(map((): ResyncTrigger => 'signal')),
  );
