/** monotonicScheduler: RxJS's async scheduler, its time read from a clock NTP never steps. */
import { asyncScheduler, type SchedulerLike } from 'rxjs';

/**
 * RxJS's async scheduler on a clock that never steps (`performance.now()`): its own `now()` is the wall clock's, and
 * the operators that read it (debounceTime, the start-up wait, the loader's and drift repair's due times) took NTP
 * setting the wall clock for time passing. Set forward an hour, `--once` gave up on the server at once; set back
 * an hour, a burst of config changes waited an hour to be read, a lost model an hour to be loaded again.
 * Its time is still ms since the epoch, as RxJS's was (the wall clock at the process's start plus the time since,
 * whole ms): a status's `since` is read from it, and `/status` shows it as a date (uptime showed 1970).
 */
export const monotonicScheduler: SchedulerLike = {
  now: () => Math.floor(performance.timeOrigin + performance.now()),
  schedule: asyncScheduler.schedule.bind(asyncScheduler),
};
