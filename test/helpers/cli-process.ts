/** Runs the built CLI (`node dist/cli.js`) as a child process and reads its stdout and stderr line by line. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { withTimeout } from './with-timeout';

/** The built entry point: what `npm test` builds first (pretest) and what users run as `modelsync`. */
export const cliPath = join(__dirname, '..', '..', 'dist', 'cli.js');

/** How a child ended: an exit code, or the signal that killed it. */
export interface CliExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** What a stream carried so far: the raw text and its complete lines (a last unterminated line joins at the end). */
export interface StreamOutput {
  readonly text: string;
  readonly lines: ReadonlyArray<string>;
}

/** A running CLI process; its outputs fill up as they arrive. */
export interface CliProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdout: StreamOutput;
  readonly stderr: StreamOutput;
  /** Resolves once the process has exited and its output streams are closed. */
  readonly exited: Promise<CliExit>;
  /** Resolves with the first `count` stdout lines; rejects on timeout or if the process ends before. */
  waitForStdoutLines(count: number, timeoutMs?: number): Promise<ReadonlyArray<string>>;
  /** Resolves with the first stderr line matching `predicate`; rejects on timeout or if the process ends before. */
  waitForStderrLine(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Sends `signal` and waits for the exit; rejects if the process is still running after `timeoutMs`. */
  signalAndWait(signal: NodeJS.Signals, timeoutMs?: number): Promise<CliExit>;
}

/** Everything a finished run produced. */
export interface CliResult extends CliExit {
  readonly stdout: StreamOutput;
  readonly stderr: StreamOutput;
}

const running = new Set<CliProcess>();

/** The parent's environment without MODELSYNC_* variables, so a developer's shell cannot change a test. */
const cleanEnv = (extra: Readonly<Record<string, string>>): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('MODELSYNC_'))),
  ...extra,
});

/** `promise`, or a rejection after `timeoutMs` whose message `describe` writes at that moment. */

/** Collects a stream's text and splits it into lines as they arrive, calling `onLine` after new ones. */
const collect = (stream: NodeJS.ReadableStream, onLine: () => void): StreamOutput => {
  const output = { text: '', lines: [] as string[] };
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    output.text += chunk;
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    output.lines.push(...parts);
    if (parts.length > 0) onLine();
  });
  stream.on('end', () => {
    if (partial !== '') output.lines.push(partial);
  });
  return output;
};

/** Starts `node dist/cli.js ...args` with the given extra environment (MODELSYNC_* of the parent removed). */
export const startCli = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> = {},
): CliProcess => {
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  const child = spawn(process.execPath, [cliPath, ...args], { env: cleanEnv(env), stdio: 'pipe' });
  let exit: CliExit | undefined;
  // Re-checked after every new line and at exit; each returns true once it has settled its promise.
  const checks = new Set<() => boolean>();
  const runChecks = (): void => {
    for (const check of [...checks]) if (check()) checks.delete(check);
  };
  const stdout = collect(child.stdout, runChecks);
  const stderr = collect(child.stderr, runChecks);
  const exited = new Promise<CliExit>((resolve) => {
    child.on('close', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
      runChecks();
    });
  });

  const outputSoFar = (): string => `\nstdout:\n${stdout.text}\nstderr:\n${stderr.text}`;
  const waitUntil = <T>(found: () => T | undefined, timeoutMs: number, what: string): Promise<T> => {
    let check: (() => boolean) | undefined;
    const promise = new Promise<T>((resolve, reject) => {
      check = () => {
        const value = found();
        if (value !== undefined) resolve(value);
        else if (exit !== undefined) {
          reject(new Error(`the CLI exited (${JSON.stringify(exit)}) before ${what}${outputSoFar()}`));
        } else return false;
        return true;
      };
      if (!check()) checks.add(check);
    });
    return withTimeout(promise, timeoutMs, () => `${what}${outputSoFar()}`).finally(() => {
      if (check !== undefined) checks.delete(check);
    });
  };

  const cli: CliProcess = {
    child,
    stdout,
    stderr,
    exited,
    waitForStdoutLines: (count, timeoutMs = 10_000) =>
      waitUntil(
        () => (stdout.lines.length >= count ? stdout.lines.slice(0, count) : undefined),
        timeoutMs,
        `${count} stdout lines`,
      ),
    waitForStderrLine: (predicate, timeoutMs = 10_000) =>
      waitUntil(() => stderr.lines.find(predicate), timeoutMs, 'a matching stderr line'),
    signalAndWait: (signal, timeoutMs = 5_000) => {
      child.kill(signal);
      return withTimeout(exited, timeoutMs, () => `the CLI to exit after ${signal}${outputSoFar()}`);
    },
  };
  running.add(cli);
  void exited.then(() => running.delete(cli));
  return cli;
};

/** Runs the CLI to completion and returns its exit and output; after `timeoutMs` it is killed and this rejects. */
export const runCli = async (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> = {},
  timeoutMs = 10_000,
): Promise<CliResult> => {
  const cli = startCli(args, env);
  try {
    const exit = await withTimeout(cli.exited, timeoutMs, () => `\`modelsync ${args.join(' ')}\` to exit`);
    return { ...exit, stdout: cli.stdout, stderr: cli.stderr };
  } catch (error) {
    cli.child.kill('SIGKILL');
    throw error;
  }
};

/** SIGKILLs every CLI process still running and waits for each to end: call it in `afterEach`. */
export const killAllCli = async (): Promise<void> => {
  const remaining = [...running];
  for (const cli of remaining) cli.child.kill('SIGKILL');
  await Promise.all(remaining.map((cli) => cli.exited));
};
