/** coalesceBursts: a burst of events becomes a read at its start, paced reads during it, and one after it. */
import {
  asyncScheduler,
  connect,
  debounceTime,
  filter,
  merge,
  throttleTime,
  type MonoTypeOperatorFunction,
  type SchedulerLike,
} from 'rxjs';

/** How a burst is paced: the quiet time that ends it, and the least time between two reads during it. */
export interface BurstPacing<T> {
  /** Quiet time after the last event before the trailing read; must exceed chokidar's 50 ms throttle. */
  readonly quietMs: number;
  /** At most one read per `spacingMs` while a burst goes on; default 20. */
  readonly spacingMs?: number;
  /**
   * Events that say the new content is in place (kubelet's `..data` swap, a `models.json` write): paced apart
   * from the others, so one is never held by the spacing another event started. Default: none.
   */
  readonly isDirect?: (event: T) => boolean;
}

const never = (): boolean => false;

/**
 * Emits the first event of a burst at once (no fixed delay before the first read: reaction time matters), then
 * at most one event per `spacingMs` while the burst goes on (so a quick second swap is read within `spacingMs`,
 * not only when the burst ends), and the burst's last event once nothing has arrived for `quietMs`. Direct events
 * are paced on their own: a swap's first event is its `..<timestamp>` dir, read before the `..data` rename lands
 * (the old version); sharing its spacing, the `..data` event that follows would wait up to `spacingMs` for the read
 * that sees the new version. A storm of swaps is still read at most once per `spacingMs` on each path. Why the final one: chokidar drops a second `change` of a
 * path within 50 ms, and an in-place write is caught truncated at its first event, so only a read after the
 * burst is guaranteed to see the final bytes.
 */
export const coalesceBursts =
  <T>(
    { quietMs, spacingMs = 20, isDirect = never }: BurstPacing<T>,
    scheduler: SchedulerLike = asyncScheduler,
  ): MonoTypeOperatorFunction<T> =>
  (event$) =>
    event$.pipe(
      connect((shared$) => {
        const paced = (which: (event: T) => boolean) =>
          shared$.pipe(filter(which), throttleTime(spacingMs, scheduler, { leading: true, trailing: true }));
        return merge(
          paced(isDirect),
          paced((event) => !isDirect(event)),
          shared$.pipe(debounceTime(quietMs, scheduler)),
        );
      }),
    );
