/**
 * The shared floor for logging: the root pino logger (every line redacted), process warnings as log lines, and the
 * last-resort guard that turns an error nothing handled into a log line and a count.
 */
export { createLogger, type LogFormat, type LogLevel, type Logger, redactingDestination } from './logger';
export { stderrLogger } from './logger';
export { guardProcess, logProcessWarnings, uncaughtErrorCount } from './last-resort';
