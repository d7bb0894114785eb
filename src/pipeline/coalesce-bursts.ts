/** coalesceBursts: one emission at the start of a burst of events and one when it has been quiet for a while. */
import {
  asyncScheduler,
  connect,
  debounceTime,
  exhaustMap,
  merge,
  of,
  take,
  type MonoTypeOperatorFunction,
  type SchedulerLike,
} from 'rxjs';

/**
 * Emits the first event of a burst at once (no fixed delay before the first read: reaction time matters),
 * then the burst's last event once nothing has arrived for `quietMs`. Why the trailing one: chokidar drops a
 * second `change` of a path within 50 ms, and an in-place write is caught truncated at its first event, so
 * only a read after the burst is guaranteed to see the final bytes. `quietMs` must exceed 50 ms.
 */
export const coalesceBursts =
  <T>(quietMs: number, scheduler: SchedulerLike = asyncScheduler): MonoTypeOperatorFunction<T> =>
  (event$) =>
    event$.pipe(
      connect((shared$) =>
        shared$.pipe(
          exhaustMap((first) =>
            merge(of(first), merge(of(first), shared$).pipe(debounceTime(quietMs, scheduler), take(1))),
          ),
        ),
      ),
    );
