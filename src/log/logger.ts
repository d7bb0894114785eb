/**
 * createLogger: the one root pino logger, JSON or pretty lines on stderr (stdout belongs to --dry-run output),
 * redacted; stderrLogger: that logger on fd 2, which never holds the process when stderr is not read.
 */
import { fstatSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { isatty } from 'node:tty';
import pino, { type Logger } from 'pino';
import { errorMessage } from '../core/errors';
import { lazyModule } from '../core/lazy-module';
import { redactLogLine } from '../core/redact';

export type { Logger } from 'pino';

/** pino's levels and `silent`. */
export type LogLevel = pino.LevelWithSilent;
/** How lines are written: `pretty` (pino-pretty) for people, `json` for collectors, `auto` by stderr. */
export type LogFormat = 'auto' | 'pretty' | 'json';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only for pretty lines (lazy-module.ts) */
const prettyLogs = lazyModule(() => require('pino-pretty') as typeof import('pino-pretty'));

/**
 * `destination` behind the redaction guard: every line pino writes — message, fields, child bindings, serialized
 * errors with their stacks and causes — passes through `redactLogLine` (registered secrets, URL credentials,
 * known secret shapes) on its way out. Guarding the finished line, not pino's hooks, leaves nothing a serializer,
 * a binding made before a secret was registered, or a logger child could slip past.
 */
export const redactingDestination = (destination: pino.DestinationStream): pino.DestinationStream => ({
  write: (line: string) => destination.write(redactLogLine(line)),
});

const field = (error: object, key: string): unknown => (error as Record<string, unknown>)[key];

/** An error as its type, message, and kind, status and errno code when it has them; never its stack. */
export const summarizeError = (error: unknown): unknown => {
  if (typeof error !== 'object' || error === null) return error;
  const summary: Record<string, unknown> = {
    type: typeof field(error, 'name') === 'string' ? field(error, 'name') : 'Error',
    message: errorMessage(error),
  };
  for (const key of ['kind', 'status', 'code'])
    if (field(error, key) !== undefined) summary[key] = field(error, key);
  return summary;
};

/**
 * The root logger at `level`, writing to `destination` (default: stderr) through `redactingDestination`. An error
 * (`err`) is one line — type, message, kind, status — unless the level is debug or trace, where its stack and
 * causes are kept.
 */
export const createLogger = (
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination(2),
): Logger =>
  pino(
    {
      name: 'modelsync',
      level,
      base: { pid: process.pid },
      // The level as its label ("info"), not pino's number (30): what log pipelines (Loki, Elastic, Datadog,
      // GKE's Cloud Logging agent) and pino-pretty read as a line's severity.
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: level === 'debug' || level === 'trace' ? pino.stdSerializers.err : summarizeError },
    },
    redactingDestination(destination),
  );

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

/** The most of one turn's lines held back for its one write (a pipe's buffer, 64 KiB on Linux). */
const turnBytes = 64 * 1024;

/** `stream` with what it holds corked handed on (a libuv stream tries the write at once). */
const uncorked = (stream: Writable): void => {
  while (stream.writableCorked > 0) stream.uncork();
};

/**
 * Lines to `stream` (a non-blocking one: a libuv pipe or socket), at most `maxBufferedBytes` of them waiting: past
 * that a line is dropped and counted, never queued, so memory stays bounded and no write waits. Once the stream
 * has drained, `onResumed(count)` is told how many were dropped meanwhile (the logger says so in a line).
 * `maxBufferedBytes` (default ~5,000 lines, a burst of 10k model statuses' worth) must exceed the stream's
 * high-water mark: a stream emits 'drain' only after a write past it.
 */
export const boundedDestination = (
  stream: Writable,
  onResumed: (droppedLines: number) => void = () => undefined,
  maxBufferedBytes = 1024 * 1024,
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
      // The lines of one event-loop turn go out in one write: a burst of installs logs three lines a model, and a
      // write each (with its reader's wake-up) cost ~5 % of the burst's CPU (1,000 models, 10 runs each way).
      if (stream.writableCorked === 0) {
        stream.cork();
        setImmediate(uncorked, stream);
      }
      stream.write(line);
      // Past a pipe's buffer's worth they would only wait: a turn that logs more writes as it goes.
      if (stream.writableLength >= turnBytes) uncorked(stream);
    },
    dropped: () => dropped,
    flushed: (timeoutMs) =>
      new Promise<void>((resolve) => {
        uncorked(stream);
        if (stream.writableLength === 0 || stream.destroyed) return resolve();
        const timer = setTimeout(resolve, timeoutMs);
        // Called once everything written before it is written (or the stream failed): a 'drain' comes only after a
        // write past the high-water mark.
        stream.write('', () => {
          clearTimeout(timer);
          resolve();
        });
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
  // Pending log lines must not keep a process alive that has nothing else to do (it exits through flushed).
  const stream = new Socket({ fd: 2, readable: false, writable: true }).unref();
  // An exit nobody flushed for (a library's process.exit) still hands the turn's last lines to the pipe.
  process.once('exit', () => uncorked(stream));
  return stream;
};

/**
 * `to` behind pino-pretty's line formatter (coloured on a terminal) alone: its own stream would write to fd 2 by
 * itself, blocking.
 */
const prettyLines = (to: { write(line: string): void }, colorize: boolean): { write(line: string): void } => {
  const prettify = prettyLogs().prettyFactory({ colorize, translateTime: 'SYS:HH:MM:ss.l' });
  return { write: (line) => to.write(prettify(line)) };
};

/**
 * The root logger at `level` in `format` on fd 2: pretty lines for `pretty`, or `auto` with stderr a terminal;
 * else JSON. A pipe or socket (a container's stderr) is written without blocking, through a bounded buffer that
 * drops lines when full (one warn line says how many, once stderr takes lines again); a file or terminal
 * directly and synchronously: they do not stay full.
 */
export const stderrLogger = (level: LogLevel, format: LogFormat): StderrLogger => {
  const tty = isatty(2);
  const stream = nonBlockingStderr();
  const bounded =
    stream &&
    boundedDestination(stream, (droppedLines) =>
      log.warn({ droppedLines }, 'log lines dropped: stderr was not taking them'),
    );
  // Synchronously (pino.destination's default writes through libuv's pool): a line written just before a kill
  // (see cli.ts, exitNow) must not be lost with the process.
  const destination = bounded ?? pino.destination({ dest: 2, sync: true });
  const log = createLogger(
    level,
    format === 'pretty' || (format === 'auto' && tty) ? prettyLines(destination, tty) : destination,
  );
  return { log, flushed: (timeoutMs) => bounded?.flushed(timeoutMs) ?? Promise.resolve() };
};
