/**
 * guardProcess: the last resort. An error nothing handled (a library throwing in its own callback, a rejection
 * nobody awaits) would end the process and every model with it. Here it is one error line and a count
 * (`modelsync_uncaught_errors_total`), and the agent goes on: the operation it broke fails on its own deadline.
 */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';

let caught = 0;

/** How many errors the guard has caught in this process. */
export const uncaughtErrorCount = (): number => caught;

/** At most one line per window: a library failing in a loop must not flood the log (the count has them all). */
const windowMs = 1000;

/** Installs the guard on `target` (the process); returns what takes it off again. */
export const guardProcess = (log: Logger, target: EventEmitter = process, now = Date.now): (() => void) => {
  let windowStart = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  const caughtOne =
    (origin: 'uncaught exception' | 'unhandled rejection') =>
    (error: unknown): void => {
      caught++;
      const at = now();
      if (at - windowStart < windowMs) {
        unlogged++;
        return;
      }
      windowStart = at;
      log.error(
        { component: 'process', origin, err: error, ...(unlogged > 0 ? { notLogged: unlogged } : {}) },
        `${origin}: an error nothing handled; logged and counted, the agent goes on`,
      );
      unlogged = 0;
    };
  const onException = caughtOne('uncaught exception');
  const onRejection = caughtOne('unhandled rejection');
  target.on('uncaughtException', onException);
  target.on('unhandledRejection', onRejection);
  return () => {
    target.off('uncaughtException', onException);
    target.off('unhandledRejection', onRejection);
  };
};
