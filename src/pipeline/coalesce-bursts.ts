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
  /**
   * Events that only end a burst, never lead a read of their own (a step of a swap whose last event is direct): they
   * hold the trailing read back like any other event. Default: none.
   */
  readonly isTrailingOnly?: (event: T) => boolean;
}

const never = (): boolean => false;

/**
 * Emits the first event of a burst at once (reaction time matters), then at most one per `spacingMs` while it goes
 * on (a quick second swap is read within `spacingMs`), and the last once nothing has arrived for `quietMs`: only a
 * read after the burst surely sees the final bytes (docs/background.md). Direct events are paced on their own: a
 * swap starts with its `..<timestamp>` dir, read before `..data` lands, whose event must not wait out that spacing.
 */
export const coalesceBursts =
  <T>(
    { quietMs, spacingMs = 20, isDirect = never, isTrailingOnly = never }: BurstPacing<T>,
    scheduler: SchedulerLike = asyncScheduler,
  ): MonoTypeOperatorFunction<T> =>
  (event$) =>
    event$.pipe(
      connect((shared$) => {
        const paced = (which: (event: T) => boolean) =>
          shared$.pipe(filter(which), throttleTime(spacingMs, scheduler, { leading: true, trailing: true }));
        return merge(
          paced(isDirect),
          paced((event) => !isDirect(event) && !isTrailingOnly(event)),
          shared$.pipe(debounceTime(quietMs, scheduler)),
        );
      }),
    );
