/** A pino destination that keeps the parsed JSON lines, for tests where the log is the behaviour. */
import { Writable } from 'node:stream';
import pino from 'pino';

/**
 * One parsed log line. `level` is its label (`"info"`) on the lines of `createLogger` and the CLI, pino's number
 * (30) on those of a bare `pino()`: compare levels through `levelValue`, `atLevel` and `atLeast`.
 */
export type LogLine = Record<string, unknown> & { level: number | string; msg: string };

/** A line's level as pino's number, whichever form it carries; throws on a line without a level pino knows. */
export const levelValue = (line: Readonly<Record<string, unknown>>): number => {
  const level = line['level'];
  const value = typeof level === 'string' ? pino.levels.values[level] : level;
  if (typeof value !== 'number' || pino.levels.labels[value] === undefined)
    throw new Error(`not a pino level: ${JSON.stringify(level)} in ${JSON.stringify(line)}`);
  return value;
};

/** Matches the lines at `label` (`warn`: warn lines only). */
export const atLevel =
  (label: pino.Level) =>
  (line: Readonly<Record<string, unknown>>): boolean =>
    levelValue(line) === levelValue({ level: label });

/** Matches the lines at `label` or above (`warn`: warn, error and fatal lines). */
export const atLeast =
  (label: pino.Level) =>
  (line: Readonly<Record<string, unknown>>): boolean =>
    levelValue(line) >= levelValue({ level: label });

export class LogSink extends Writable {
  readonly lines: LogLine[] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    for (const text of chunk.toString('utf8').split('\n'))
      if (text.trim() !== '') this.lines.push(JSON.parse(text) as LogLine);
    callback();
  }

  /** Lines whose message contains `text`. */
  withMessage(text: string): LogLine[] {
    return this.lines.filter((line) => line.msg.includes(text));
  }
}

/** A logger stand-in that keeps its warn lines (fields and message), for operators that take `Pick<Logger, 'warn'>`. */
export const recordWarnings = () => {
  const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    log: { warn: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) },
  };
};

/** What the `reason` field of each line `sink` kept says, in order (lines without one left out). */
export const reasonsIn = (sink: LogSink): string[] =>
  sink.lines.flatMap((line) => (typeof line['reason'] === 'string' ? [line['reason']] : []));
