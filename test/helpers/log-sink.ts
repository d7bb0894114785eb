/** A pino destination that keeps the parsed JSON lines, for tests where the log is the behaviour. */
import { Writable } from 'node:stream';

export type LogLine = Record<string, unknown> & { level: number; msg: string };

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
