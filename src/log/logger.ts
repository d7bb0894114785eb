/** createLogger: the one root pino logger, JSON or pretty lines on stderr (stdout belongs to --dry-run output), redacted. */
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
export const prettyLogs = lazyModule(() => require('pino-pretty') as typeof import('pino-pretty'));

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

/** Whether `format` asks for pretty lines: `pretty`, or `auto` with stderr a terminal. */
export const prettyFor = (format: LogFormat, stderrIsTty: boolean): boolean =>
  format === 'pretty' || (format === 'auto' && stderrIsTty);

/**
 * Where log lines go for `format` (see `prettyFor`): JSON lines on stderr, or pino-pretty's (coloured on a terminal).
 * Both write synchronously, so nothing is lost at exit: for a file or a terminal, not a pipe (see `stderrLogger`).
 */
export const logDestination = (format: LogFormat, stderrIsTty: boolean): pino.DestinationStream =>
  prettyFor(format, stderrIsTty)
    ? prettyLogs().build({
        destination: 2,
        sync: true,
        colorize: stderrIsTty,
        translateTime: 'SYS:HH:MM:ss.l',
      })
    : pino.destination(2);
