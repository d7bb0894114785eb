#!/usr/bin/env node
/** modelsync's process entry: arguments to a mode, one subscription, signals, the exit code. */
import { fromEvent, merge, take, takeUntil } from 'rxjs';
import type { AppConfig } from './core/app-config';
import { redact } from './core/redact';
import { createLogger } from './edge/logger';
import { logProcessWarnings } from './edge/process-warnings';
import { dryRunMode, syncMode } from './modes';
import { parseArgs } from './parse-args';

/** Exits once stdout has taken every line: a pipe is written asynchronously, and exit would drop the rest. */
let exiting = false;
const exitAfterStdout = (code: number): void => {
  exiting = true;
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
};

const run = (config: AppConfig): void => {
  const log = createLogger(config.logLevel);
  // Before any SDK client is made: the AWS SDK warns about the Node version then.
  logProcessWarnings(log);
  const shutdown$ = merge(fromEvent(process, 'SIGTERM'), fromEvent(process, 'SIGINT')).pipe(take(1));
  const mode$ = config.dryRun ? dryRunMode(config, log, process.env) : syncMode(config, log, process.env);
  mode$.pipe(takeUntil(shutdown$)).subscribe({
    next: (output) => {
      if (output._tag === 'Line') process.stdout.write(`${output.line}\n`);
      else exitAfterStdout(output.code);
    },
    error: (error: unknown) => {
      log.fatal({ err: error }, 'modelsync stopped on an unexpected error');
      exitAfterStdout(1);
    },
    complete: () => {
      if (exiting) return;
      log.info('modelsync stopped');
      // Closing watchers and sockets is asynchronous; once stdout is drained, leave even if something lingers.
      process.stdout.write('', () => setTimeout(() => process.exit(0), 2000).unref());
    },
  });
};

const parsed = parseArgs(process.argv, process.env);
if (parsed._tag === 'Run') run(parsed.config);
else if (parsed._tag === 'UsageError') {
  // 2 for usage errors; 1 is kept for "the config is invalid" (--dry-run --once).
  // Through the redaction like every log line: a bad value is quoted, and a URL may carry credentials.
  process.stderr.write(redact(parsed.message));
  process.exitCode = parsed.exitCode;
} else {
  process.stdout.write(parsed.text);
}
