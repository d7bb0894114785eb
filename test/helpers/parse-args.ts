/** parseArgs as a test calls it: the arguments alone, and what a parse that must succeed or fail gives. */
import { parseArgs, type ParsedArgs } from '../../src/command/parse-args';
import type { AppConfig } from '../../src/core/flags/app-config';
import type { Env } from '../../src/core/env';

/** `modelsync <args>` with `env`, as the process entry parses it. */
export const parse = (args: ReadonlyArray<string>, env: Env = {}): ParsedArgs =>
  parseArgs(['/usr/bin/node', '/app/dist/cli.js', ...args], env);

/** The config of a parse that must succeed. */
export const configOf = (args: ReadonlyArray<string>, env: Env = {}): AppConfig => {
  const parsed = parse(args, env);
  if (parsed._tag !== 'Run') throw new Error(`expected a config, got ${JSON.stringify(parsed)}`);
  return parsed.config;
};

/** The stderr lines of a parse that must be a usage error (exit code 2), the pointer to `--help` last and left off. */
export const usageLines = (args: ReadonlyArray<string>, env: Env = {}): string[] => {
  const parsed = parse(args, env);
  if (parsed._tag !== 'UsageError') throw new Error(`expected a usage error, got ${JSON.stringify(parsed)}`);
  expect(parsed.exitCode).toBe(2);
  expect(parsed.message.endsWith("Try 'modelsync --help' for the flags.\n")).toBe(true);
  return parsed.message.trimEnd().split('\n').slice(0, -1);
};
