/** createLogger: the one root pino logger, JSON lines on stderr (stdout belongs to --dry-run output). */
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

export const createLogger = (
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination(2),
): Logger => pino({ name: 'modelsync', level, base: { pid: process.pid } }, destination);
