/** Runs the built agent (`node dist/cli.js`) as a child process and parses its pino JSON stderr as it arrives. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { withTimeout } from './with-timeout';

/** The built entry point: `npm test` builds it first (pretest); run `npm run build` before a bare jest run. */
export const agentCliPath = join(__dirname, '..', '..', 'dist', 'cli.js');

/** One pino line as the agent wrote it. */
export type AgentLog = Record<string, unknown> & { readonly level: number; readonly msg: string };

/** How the process ended: an exit code, or the signal that killed it. */
export interface AgentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Flag values by flag name without the dashes, e.g. `{ 'config-dir': dir, 'load-concurrency': 2 }`. */
export type AgentFlags = Readonly<Record<string, string | number | boolean>>;

/** A running agent; `logs` fills up as lines arrive. */
export interface AgentProcess {
  readonly child: ChildProcess;
  /** Every stderr line that parsed as a JSON object, in arrival order. */
  readonly logs: ReadonlyArray<AgentLog>;
  /** Every other output line (stdout, or stderr that is not JSON, such as a crash trace). */
  readonly otherLines: ReadonlyArray<string>;
  /** `Date.now()` of the last output line (or of the spawn). */
  readonly lastOutputAt: () => number;
  /** Resolves once the process has exited and its streams are closed. */
  readonly exited: Promise<AgentExit>;
  /**
   * Resolves with the first log matching `match` (a message, or a predicate) among the logs from index `since`
   * on (default 0: from the start); rejects on timeout or on exit before.
   */
  waitForLog(
    match: string | ((log: AgentLog) => boolean),
    timeoutMs?: number,
    since?: number,
  ): Promise<AgentLog>;
  /** Resolves once no output line arrived for `quietMs`; rejects on timeout or on exit before. */
  waitForQuiet(quietMs: number, timeoutMs?: number): Promise<void>;
  /** Sends `signal` and waits for the exit; rejects if the process is still running after `timeoutMs`. */
  kill(signal: NodeJS.Signals, timeoutMs?: number): Promise<AgentExit>;
  /** The log and other lines so far, for failure messages. */
  transcript(lastLines?: number): string;
}

const running = new Set<AgentProcess>();

/** Calls `onLine` with each complete line of `stream` (a last unterminated line at the end). */
const readLines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void): void => {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) onLine(part);
  });
  stream.on('end', () => {
    if (partial !== '') onLine(partial);
    partial = '';
  });
};

const parseLog = (line: string): AgentLog | undefined => {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as AgentLog)
      : undefined;
  } catch {
    return undefined;
  }
};

/** `--name value` pairs; `true` gives a bare `--name`, `false` leaves the flag out. */
export const agentArgs = (flags: AgentFlags): string[] =>
  Object.entries(flags).flatMap(([flag, value]) => {
    if (value === false) return [];
    return value === true ? [`--${flag}`] : [`--${flag}`, String(value)];
  });

/**
 * Starts `node dist/cli.js` with `flags`. MODELSYNC_* variables of the parent are dropped so a developer's
 * shell cannot change a test; `env` adds variables.
 */
export const spawnAgent = (flags: AgentFlags, env: Readonly<Record<string, string>> = {}): AgentProcess => {
  if (!existsSync(agentCliPath)) throw new Error(`${agentCliPath} is missing: run \`npm run build\` first`);
  const childEnv: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('MODELSYNC_'))),
    ...env,
  };
  const child = spawn(process.execPath, [agentCliPath, ...agentArgs(flags)], {
    env: childEnv,
    stdio: 'pipe',
  });
  const logs: AgentLog[] = [];
  const otherLines: string[] = [];
  let lastOutputAt = Date.now();
  let exit: AgentExit | undefined;
  // Re-run after each new line and at exit; a check returns true once it has settled its promise.
  const checks = new Set<() => boolean>();
  const runChecks = (): void => {
    for (const check of [...checks]) if (check()) checks.delete(check);
  };
  const onLine = (line: string, fromStderr: boolean): void => {
    if (line.trim() === '') return;
    lastOutputAt = Date.now();
    const log = fromStderr ? parseLog(line) : undefined;
    if (log !== undefined) logs.push(log);
    else otherLines.push(line);
    runChecks();
  };
  readLines(child.stdout, (line) => onLine(line, false));
  readLines(child.stderr, (line) => onLine(line, true));
  const exited = new Promise<AgentExit>((resolve) => {
    child.on('close', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
      runChecks();
    });
  });

  const transcript = (lastLines = 40): string =>
    [...logs.slice(-lastLines).map((log) => JSON.stringify(log)), ...otherLines.slice(-lastLines)].join('\n');

  const waitUntil = <T>(found: () => T | undefined, timeoutMs: number, what: string): Promise<T> => {
    let check: (() => boolean) | undefined;
    const promise = new Promise<T>((resolve, reject) => {
      check = () => {
        const value = found();
        if (value !== undefined) resolve(value);
        else if (exit !== undefined) {
          reject(new Error(`the agent exited (${JSON.stringify(exit)}) before ${what}\n${transcript()}`));
        } else return false;
        return true;
      };
      if (!check()) checks.add(check);
    });
    return withTimeout(promise, timeoutMs, what).finally(() => {
      if (check !== undefined) checks.delete(check);
    });
  };

  const agent: AgentProcess = {
    child,
    logs,
    otherLines,
    lastOutputAt: () => lastOutputAt,
    exited,
    waitForLog: (match, timeoutMs = 30_000, since = 0) => {
      const predicate = typeof match === 'string' ? (log: AgentLog) => log.msg === match : match;
      let scanned = since;
      return waitUntil(
        () => {
          for (; scanned < logs.length; scanned++) if (predicate(logs[scanned]!)) return logs[scanned];
          return undefined;
        },
        timeoutMs,
        `the log ${typeof match === 'string' ? JSON.stringify(match) : 'line matching a predicate'}`,
      );
    },
    waitForQuiet: async (quietMs, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (exit !== undefined)
          throw new Error(`the agent exited (${JSON.stringify(exit)}) while waiting for quiet`);
        const quietFor = Date.now() - lastOutputAt;
        if (quietFor >= quietMs) return;
        if (Date.now() > deadline) throw new Error(`no ${quietMs} ms without output within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(quietMs - quietFor, 50)));
      }
    },
    kill: (signal, timeoutMs = 10_000) => {
      if (exit === undefined) child.kill(signal);
      return withTimeout(exited, timeoutMs, `the agent to exit after ${signal}`);
    },
    transcript,
  };
  running.add(agent);
  void exited.then(() => running.delete(agent));
  return agent;
};

/** SIGKILLs every agent still running and waits for each to end: call it in `afterEach`. */
export const killAllAgents = async (): Promise<void> => {
  const remaining = [...running];
  for (const agent of remaining) agent.child.kill('SIGKILL');
  await Promise.all(remaining.map((agent) => agent.exited));
};
