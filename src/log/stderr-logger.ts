/** stderrLogger: the process's root logger on stderr, which never holds the process when stderr is not read. */
import { isatty } from 'node:tty';
import { boundedDestination, nonBlockingStderr } from './bounded-destination';
import {
  createLogger,
  logDestination,
  prettyFor,
  prettyLogs,
  type LogFormat,
  type LogLevel,
  type Logger,
} from './logger';

export interface StderrLogger {
  readonly log: Logger;
  /** Resolves once the lines logged are written, or after `timeoutMs` (stderr may never be read again). */
  flushed(timeoutMs: number): Promise<void>;
}

/** `to` behind pino-pretty's line formatter alone: its stream would write to fd 2 by itself, blocking. */
const prettyLines = (to: { write(line: string): void }): { write(line: string): void } => {
  const prettify = prettyLogs().prettyFactory({ colorize: false, translateTime: 'SYS:HH:MM:ss.l' });
  return { write: (line) => to.write(prettify(line)) };
};

/**
 * The root logger at `level` in `format` on fd 2. A pipe or socket (a container's stderr) is written without
 * blocking, through a bounded buffer that drops lines when full (one warn line says how many, once stderr takes
 * lines again); a file or terminal synchronously (`logDestination`), as they do not stay full.
 */
export const stderrLogger = (level: LogLevel, format: LogFormat): StderrLogger => {
  const tty = isatty(2);
  const stream = nonBlockingStderr();
  if (stream === undefined) {
    return { log: createLogger(level, logDestination(format, tty)), flushed: () => Promise.resolve() };
  }
  const state: { log?: Logger } = {};
  const bounded = boundedDestination(stream, (droppedLines) =>
    state.log?.warn({ droppedLines }, 'log lines dropped: stderr was not taking them'),
  );
  const destination = prettyFor(format, tty) ? prettyLines(bounded) : bounded;
  state.log = createLogger(level, destination);
  return { log: state.log, flushed: (timeoutMs) => bounded.flushed(timeoutMs) };
};
