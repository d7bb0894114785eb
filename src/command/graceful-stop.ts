/** gracefulStop: on SIGTERM/SIGINT, let the calls in flight finish (up to a timeout), then stop the agent. */
import type { Logger } from 'pino';
import { exhaustMap, from, take, takeUntil, timer, map, race, type Observable } from 'rxjs';

/** What a graceful stop needs. */
export interface GracefulStopOptions {
  /** The first emission starts the stop. */
  readonly shutdown$: Observable<unknown>;
  /** Stops taking up work, aborts downloads and resolves once the calls in flight have ended (`loader.drain`). */
  readonly drain: () => Promise<void>;
  /** The longest wait for `drain`; past it, the calls still in flight are aborted. */
  readonly timeoutMs: number;
  readonly log: Logger;
}

/**
 * `agent$` until a shutdown has drained: on the first `shutdown$`, `drain` (downloads stop and their staging dirs
 * are removed; load and unload calls already sent may finish), then `agent$` is unsubscribed — at once when the
 * drain ends, or after `timeoutMs`, which aborts what is still running. Completes then, so the caller exits 0.
 */
export const gracefulStop = <T>(agent$: Observable<T>, options: GracefulStopOptions): Observable<T> => {
  const { log, timeoutMs } = options;
  const stopped$ = options.shutdown$.pipe(
    take(1),
    exhaustMap(() => {
      const started = Date.now();
      log.info(
        { timeoutMs },
        'shutting down: downloads stop; calls to the model server in flight may finish',
      );
      return race(from(options.drain()).pipe(map(() => true)), timer(timeoutMs).pipe(map(() => false))).pipe(
        map((drained) => {
          const durationMs = Date.now() - started;
          if (drained) log.info({ durationMs }, 'modelsync stopped');
          else
            log.warn(
              { durationMs, timeoutMs },
              'modelsync stopped: calls still in flight at the shutdown timeout were aborted',
            );
        }),
      );
    }),
  );
  return agent$.pipe(takeUntil(stopped$));
};
