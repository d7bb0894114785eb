/** stderrLogger: the process's root logger on stderr, which never holds the process when stderr is not read. */
import { fstatSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { isatty } from 'node:tty';
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

export interface BoundedDestination {
  write(line: string): void;
  /** Lines dropped so far. */
  dropped(): number;
  /** Resolves once every line taken is written, or after `timeoutMs` (a stream nobody reads never drains). */
  flushed(timeoutMs: number): Promise<void>;
}

/** What the buffer may hold before lines are dropped: ~5,000 lines, a burst of 10k model statuses' worth. */
export const defaultMaxBufferedBytes = 1024 * 1024;

/**
 * Lines to `stream` (a non-blocking one: a libuv pipe or socket), at most `maxBufferedBytes` of them waiting: past
 * that a line is dropped and counted, never queued, so memory stays bounded and no write waits. Once the stream
 * has drained, `onResumed(count)` is told how many were dropped meanwhile (the logger says so in a line).
 * `maxBufferedBytes` must exceed the stream's high-water mark: a stream emits 'drain' only after a write past it.
 */
export const boundedDestination = (
  stream: Writable,
  onResumed: (droppedLines: number) => void = () => undefined,
  maxBufferedBytes = defaultMaxBufferedBytes,
): BoundedDestination => {
  let dropped = 0;
  let droppedSinceResume = 0;
  stream.on('drain', () => {
    if (droppedSinceResume === 0) return;
    const count = droppedSinceResume;
    droppedSinceResume = 0;
    onResumed(count);
  });
  // A stream that fails (EPIPE: the reader went away) is written no more; logging must not throw or crash.
  stream.on('error', () => undefined);
  return {
    write: (line) => {
      if (stream.destroyed || stream.writableLength + line.length > maxBufferedBytes) {
        dropped += 1;
        droppedSinceResume += 1;
        return;
      }
      stream.write(line);
    },
    dropped: () => dropped,
    flushed: (timeoutMs) =>
      new Promise<void>((resolve) => {
        if (stream.writableLength === 0 || stream.destroyed) return resolve();
        const timer = setTimeout(done, timeoutMs);
        function done(): void {
          clearTimeout(timer);
          stream.off('drain', done);
          resolve();
        }
        stream.once('drain', done);
      }),
  };
};

/**
 * fd 2 as a non-blocking stream when it is a pipe or a socket (a container's stderr), else `undefined`. Node
 * writes process.stderr to a pipe synchronously: with the pipe full (its reader stuck), every log call blocked
 * the event loop, and a SIGTERM handler never ran. A libuv pipe on the fd writes what the pipe takes and queues
 * the rest. Files and terminals stay synchronous: they do not stay full.
 */
export const nonBlockingStderr = (): Writable | undefined => {
  const stats = fstatSync(2);
  if (!stats.isFIFO() && !stats.isSocket()) return undefined;
  const socket = new Socket({ fd: 2, readable: false, writable: true });
  // Pending log lines must not keep a process alive that has nothing else to do (it exits through flushed).
  socket.unref();
  return socket;
};

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
