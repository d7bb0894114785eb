/** The storage initializer in process: its config, one run to its exit, and the log lines it wrote. */
import pino from 'pino';
import { firstValueFrom, toArray } from 'rxjs';
import { initializerMode, type DownloadPair } from '../../src/command/initializer-mode';
import type { Output } from '../../src/command/modes';
import type { Env } from '../../src/core/env';
import { defaultAppConfig, type AppConfig } from '../../src/core/flags/app-config';
import { atLeast, LogSink, type LogLine } from './log-sink';

/** The flags' defaults with retries short enough for a test (1 ms base, 20 ms cap), overridden by `settings`. */
export const initializerConfig = (settings: Partial<AppConfig> = {}): AppConfig => ({
  ...defaultAppConfig,
  retryBaseMs: 1,
  retryMaxMs: 20,
  ...settings,
});

/** What one run produced: its outputs (the last is the exit) and its log lines, parsed. */
export interface InitializerRun {
  readonly outputs: ReadonlyArray<Output>;
  readonly exitCode: number | undefined;
  readonly logs: ReadonlyArray<LogLine>;
  /** The lines at level error and above. */
  readonly errors: ReadonlyArray<LogLine>;
  /** Every log line as one text, to look for what must never show. */
  readonly logText: string;
}

/** The log lines `sink` holds, as a run's outcome. */
const runOf = (outputs: ReadonlyArray<Output>, sink: LogSink): InitializerRun => {
  const last = outputs[outputs.length - 1];
  return {
    outputs,
    exitCode: last?._tag === 'Exit' ? last.code : undefined,
    logs: sink.lines,
    errors: sink.lines.filter(atLeast('error')),
    logText: JSON.stringify(sink.lines),
  };
};

/** Runs `initializerMode` over `pairs` to its exit, logging at info into a sink. */
export const runInitializer = async (
  pairs: ReadonlyArray<DownloadPair>,
  config: AppConfig = initializerConfig(),
  env: Env = {},
): Promise<InitializerRun> => {
  const sink = new LogSink();
  const outputs = await firstValueFrom(
    initializerMode(pairs, config, pino({ level: 'info' }, sink), env).pipe(toArray()),
  );
  return runOf(outputs, sink);
};
