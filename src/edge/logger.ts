/** createLogger: the one root pino logger, JSON lines on stderr (stdout belongs to --dry-run output). */
import pino, { type Logger } from 'pino';
import type { LogLevel } from '../core/app-config';

export type { Logger } from 'pino';

export const createLogger = (
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination(2),
): Logger => pino({ name: 'modelsync', level, base: { pid: process.pid } }, destination);
