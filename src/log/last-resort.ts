/**
 * The process's own events as log lines: its warnings (logProcessWarnings), and guardProcess, the last resort. An
 * error nothing handled (a library throwing in its own callback, a rejection nobody awaits) would end the process
 * and every model with it. Here it is one error line and a count (`modelsync_uncaught_errors_total`), and the
 * agent goes on: the operation it broke fails on its own deadline.
 */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';

let caught = 0;

/** How many errors the guard has caught in this process. */
export const uncaughtErrorCount = (): number => caught;

/** At most one line per window: a library failing in a loop must not flood the log (the count has them all). */
const windowMs = 1000;

/**
 * Installs the guard on `target` (the process); returns what takes it off again. `now` times the window, by default
 * on a clock NTP never steps: set back an hour, the wall clock kept every error unlogged for that hour.
 */
export const guardProcess = (
  log: Logger,
  target: EventEmitter = process,
  now: () => number = () => performance.now(),
): (() => void) => {
  let windowStart = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  const caughtOne =
    (origin: 'uncaught exception' | 'unhandled rejection') =>
    (error: unknown): void => {
      caught++;
      const at = now();
      if (at - windowStart < windowMs) return void unlogged++;
      windowStart = at;
      log.error(
        { component: 'process', origin, err: error, ...(unlogged > 0 ? { notLogged: unlogged } : {}) },
        `${origin}: an error nothing handled; logged and counted, the agent goes on`,
      );
      unlogged = 0;
    };
  const onException = caughtOne('uncaught exception');
  const onRejection = caughtOne('unhandled rejection');
  target.on('uncaughtException', onException).on('unhandledRejection', onRejection);
  return () => void target.off('uncaughtException', onException).off('unhandledRejection', onRejection);
};

type WarningListener = (warning: Error & { readonly code?: unknown }) => void;

/**
 * Takes Node's `warning` printer (plain text on stderr, which carries only JSON lines) off `target` and logs each
 * warning as one warn line, its stack only at debug or below. Returns what puts the printer back.
 */
export const logProcessWarnings = (log: Logger, target: EventEmitter = process): (() => void) => {
  const printers = target.listeners('warning') as WarningListener[];
  for (const printer of printers) target.off('warning', printer);
  const onWarning: WarningListener = ({ name, message, code, stack }) => {
    log.warn(
      {
        component: 'process',
        // Not `name`: every line already has the logger's.
        warning: name,
        ...(typeof code === 'string' ? { code } : {}),
        message,
        ...(log.isLevelEnabled('debug') ? { stack } : {}),
      },
      'process warning',
    );
  };
  target.on('warning', onWarning);
  return () => {
    target.off('warning', onWarning);
    for (const printer of printers) target.on('warning', printer);
  };
};
