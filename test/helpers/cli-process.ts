/** Runs the built CLI (`node dist/cli.js`) as a child process, reading its output line by line as it arrives. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor, withTimeout } from '../../src/testing/wait';
import type { LogLine } from './log-sink';

/** The built entry point: `npm test` builds it first (pretest); run `npm run build` before a bare jest run. */
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

/** Flag values by flag name without the dashes, e.g. `{ 'config-dir': dir, 'load-concurrency': 2 }`. */
export type CliFlags = Readonly<Record<string, string | number | boolean>>;

/** `--name value` pairs; `true` gives a bare `--name`, `false` leaves the flag out. */
export const cliArgs = (flags: CliFlags): string[] =>
  Object.entries(flags).flatMap(([flag, value]) => {
    if (value === false) return [];
    return value === true ? [`--${flag}`] : [`--${flag}`, String(value)];
  });

/** How to start the CLI. */
export interface CliOptions {
  /** Extra environment; MODELSYNC_* variables of the parent are dropped so a developer's shell cannot change a run. */
  readonly env?: Readonly<Record<string, string>>;
  /** The script to run instead of `dist/cli.js` (the bench runs its own build). */
  readonly cliPath?: string;
  /** Runs the script itself, as the npm bin runs: its `#!` line picks node from PATH and the flags. */
  readonly asBin?: boolean;
  /** Node.js flags before the script (some, such as `--optimize-for-size`, are refused in NODE_OPTIONS). */
  readonly nodeFlags?: ReadonlyArray<string>;
  /** A command that execs the rest of its arguments (node, the flags, the script), as `unshare -rm sh -c …`. */
  readonly within?: ReadonlyArray<string>;
}

/** A running CLI process; its outputs fill up as they arrive. */
export interface CliProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdout: StreamOutput;
  readonly stderr: StreamOutput;
  /** Every stderr line that parsed as a JSON object (a pino log line), in arrival order. */
  readonly logs: ReadonlyArray<LogLine>;
  /** Every other non-empty line: stdout, and stderr that is not JSON (such as a crash trace). */
  readonly otherLines: ReadonlyArray<string>;
  /** Resolves once the process has exited and its output streams are closed. */
  readonly exited: Promise<CliExit>;
  /**
   * Resolves with the first log matching `match` (a message, or a predicate) from index `since` of `logs` on
   * (default 0: from the start); rejects on timeout or if the process ends before.
   */
  waitForLog(
    match: string | ((log: LogLine) => boolean),
    timeoutMs?: number,
    since?: number,
  ): Promise<LogLine>;
  /** Resolves with the first `count` stdout lines; rejects on timeout or if the process ends before. */
  waitForStdoutLines(count: number, timeoutMs?: number): Promise<ReadonlyArray<string>>;
  /** Resolves once no output line arrived for `quietMs`; rejects on timeout or if the process ends before. */
  waitForQuiet(quietMs: number, timeoutMs?: number): Promise<void>;
  /** Sends `signal` (unless it has exited) and waits for the exit; rejects if it still runs after `timeoutMs`. */
  signalAndWait(signal: NodeJS.Signals, timeoutMs?: number): Promise<CliExit>;
  /** The last lines of both streams, for failure messages. */
  transcript(lastLines?: number): string;
}

/** Everything a finished run produced. */
export interface CliResult extends CliExit {
  readonly stdout: StreamOutput;
  readonly stderr: StreamOutput;
}

/** The shortest wait for a CLI's line: over a busy machine's start-up, under jest's test timeout (jest.config.js). */
const patientMs = 60_000;

const running = new Set<CliProcess>();

const parseLog = (line: string): LogLine | undefined => {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as LogLine)
      : undefined;
  } catch {
    return undefined;
  }
};

/** Collects a stream's text and its lines as they arrive, calling `onLine` with each complete line. */
const collect = (stream: NodeJS.ReadableStream, onLine: (line: string) => void): StreamOutput => {
  const output = { text: '', lines: [] as string[] };
  let partial = '';
  const add = (line: string): void => {
    output.lines.push(line);
    onLine(line);
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    output.text += chunk;
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    parts.forEach(add);
  });
  stream.on('end', () => {
    if (partial !== '') add(partial);
    partial = '';
  });
  return output;
};

/** Starts `node <cli> ...args` (or `<cli> ...args`, `asBin`); `killAllCli` in `afterEach` ends it if the test does not. */
export const startCli = (args: ReadonlyArray<string>, options: CliOptions = {}): CliProcess => {
  const script = options.cliPath ?? cliPath;
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first`);
  // Neither the developer's MODELSYNC_* settings nor their proxy (the tests' servers are on 127.0.0.1) leak in.
  const inherited = Object.entries(process.env).filter(
    ([key]) => !key.startsWith('MODELSYNC_') && !/^(https?|no)_proxy$/i.test(key),
  );
  // No HTTP surface unless the test asks for one (`--http-port` or the env var): runs in parallel, and other
  // processes on the machine, would all want the default port.
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(inherited),
    MODELSYNC_HTTP_PORT: '0',
    ...options.env,
  };
  const command = options.asBin
    ? [script, ...args]
    : [process.execPath, ...(options.nodeFlags ?? []), script, ...args];
  const [file, ...rest] = [...(options.within ?? []), ...command] as [string, ...string[]];
  const child = spawn(file, rest, { env, stdio: 'pipe' });
  const logs: LogLine[] = [];
  const otherLines: string[] = [];
  let lastOutputAt = Date.now();
  let exit: CliExit | undefined;
  const onLine = (line: string, fromStderr: boolean): void => {
    if (line.trim() === '') return;
    lastOutputAt = Date.now();
    const log = fromStderr ? parseLog(line) : undefined;
    if (log !== undefined) logs.push(log);
    else otherLines.push(line);
  };
  const stdout = collect(child.stdout, (line) => onLine(line, false));
  const stderr = collect(child.stderr, (line) => onLine(line, true));
  const exited = new Promise<CliExit>((resolve) => {
    child.on('close', (code, signal) => resolve((exit = { code, signal })));
  });

  const transcript = (lastLines = 40): string =>
    [...logs.slice(-lastLines).map((log) => JSON.stringify(log)), ...otherLines.slice(-lastLines)].join('\n');
  /**
   * Polls `found` until it gives a value; fails at once, with the output so far, if the process has ended. The
   * timeout is a ceiling for a test that is failing anyway, never a claim about speed: it is at least
   * `patientMs`, so a busy machine's slow start-up is not a failure.
   */
  const waitUntil = async <T>(found: () => T | undefined, asked: number, what: string): Promise<T> => {
    const timeoutMs = Math.max(asked, patientMs);
    let value: T | undefined;
    await waitFor(
      () => {
        value = found();
        if (value !== undefined) return true;
        if (exit !== undefined)
          throw new Error(`the CLI exited (${JSON.stringify(exit)}) before ${what}\n${transcript()}`);
        return false;
      },
      timeoutMs,
      () => `${what}\n${transcript()}`,
    );
    return value!;
  };

  const cli: CliProcess = {
    child,
    stdout,
    stderr,
    logs,
    otherLines,
    exited,
    waitForLog: (match, timeoutMs = 10_000, since = 0) => {
      const matches = typeof match === 'string' ? (log: LogLine) => log.msg === match : match;
      const what = typeof match === 'string' ? `the log ${JSON.stringify(match)}` : 'a matching log line';
      let scanned = since;
      const next = (): LogLine | undefined => {
        for (; scanned < logs.length; scanned++) if (matches(logs[scanned]!)) return logs[scanned];
        return undefined;
      };
      return waitUntil(next, timeoutMs, what);
    },
    waitForStdoutLines: (count, timeoutMs = 10_000) =>
      waitUntil(
        () => (stdout.lines.length >= count ? stdout.lines.slice(0, count) : undefined),
        timeoutMs,
        `${count} stdout lines`,
      ),
    waitForQuiet: async (quietMs, timeoutMs = 10_000) => {
      await waitUntil(
        () => (Date.now() - lastOutputAt >= quietMs ? true : undefined),
        timeoutMs,
        `${quietMs} ms without output`,
      );
    },
    signalAndWait: (signal, timeoutMs = 10_000) => {
      if (exit === undefined) child.kill(signal);
      return withTimeout(exited, timeoutMs, () => `the CLI to exit after ${signal}\n${transcript()}`);
    },
    transcript,
  };
  running.add(cli);
  void exited.then(() => running.delete(cli));
  return cli;
};

/** Runs the CLI to completion and returns its exit and output; after `timeoutMs` it is killed and this rejects. */
export const runCli = async (
  args: ReadonlyArray<string>,
  options: CliOptions & { readonly timeoutMs?: number } = {},
): Promise<CliResult> => {
  const cli = startCli(args, options);
  try {
    const exit = await withTimeout(
      cli.exited,
      options.timeoutMs ?? 10_000,
      () => `\`modelsync ${args.join(' ')}\` to exit\n${cli.transcript()}`,
    );
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
