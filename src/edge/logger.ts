/** createLogger: the one root pino logger, JSON lines on stderr (stdout belongs to --dry-run output), redacted. */
import pino, { type Logger } from 'pino';
import type { LogLevel } from '../core/app-config';
import { redactLogLine } from '../core/redact';

export type { Logger } from 'pino';

/**
 * `destination` behind the redaction guard: every line pino writes — message, fields, child bindings, serialized
 * errors with their stacks and causes — passes through `redactLogLine` (registered secrets, URL credentials,
 * known secret shapes) on its way out. Guarding the finished line, not pino's hooks, leaves nothing a serializer,
 * a binding made before a secret was registered, or a logger child could slip past.
 */
export const redactingDestination = (destination: pino.DestinationStream): pino.DestinationStream => ({
  write: (line: string) => destination.write(redactLogLine(line)),
});

/** The root logger at `level`, writing to `destination` (default: stderr) through `redactingDestination`. */
export const createLogger = (
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination(2),
): Logger =>
  pino({ name: 'modelsync', level, base: { pid: process.pid } }, redactingDestination(destination));
