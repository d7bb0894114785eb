/** The shared floor for logging: the root pino logger (every line redacted) and process warnings as log lines. */
export { createLogger, logDestination, type Logger, redactingDestination } from './logger';
export { logProcessWarnings } from './process-warnings';
