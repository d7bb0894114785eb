/** The contract between bench/run.ts and its suites, plus the timing, statistics and child-process helpers suites share. */
import { fork } from 'node:child_process';
import { statfsSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';

/** One table cell; numbers are rounded for display only (the JSON keeps them as measured). */
export type Cell = string | number | boolean | null;

/** One row of a suite's result table; columns are the union of the rows' keys, in first-seen order. */
export type Row = Readonly<Record<string, Cell>>;

/** Which way a ratio improves: a time over the floor's is lower-is-better, a throughput over the floor's higher. */
export type Better = 'lower' | 'higher';

/**
 * A budget from an issue, checked against a measured figure; `withinBudget` is the verdict, the rest is shown.
 * Where the suite has a floor, `ratio` is modelsync's figure over the floor's from the same interleaved run and
 * `better` says which way it improves: `npm run bench:check` compares these ratios (and only these) with the
 * committed baseline.
 */
export type Check = Readonly<
  { name: string; withinBudget: boolean; ratio?: number; better?: Better } & Record<string, Cell>
>;

/** What a suite measured. run.ts adds the date, Node version and CPU before writing it to JSON. */
export interface SuiteResult {
  /** Set when the suite could not run here (say why); rows may then be empty. */
  readonly skipped?: string;
  /** The figures, one row per case. */
  readonly rows: ReadonlyArray<Row>;
  /** Pass/fail budgets, if the suite has any. */
  readonly checks?: ReadonlyArray<Check>;
  /** How to read the figures: units, method, caveats. */
  readonly notes?: ReadonlyArray<string>;
  /** Raw samples by label, for the charts (bench/charts.ts), e.g. each watcher's swap → load latencies in ms. */
  readonly series?: Readonly<Record<string, ReadonlyArray<number>>>;
}

/** How a run was asked for: `quick` shrinks every suite (fewer swaps, models and bytes) to what still gives stable ratios. */
export interface RunOptions {
  readonly quick: boolean;
}

/** A benchmark suite: list it in run.ts's `suites` to make `npm run bench [-- <name>]` run it. */
export interface Suite {
  /** Short kebab-case name: the CLI argument and the results file name (`bench/results/<name>.json`). */
  readonly name: string;
  /** One sentence: what is measured, against what. */
  readonly description: string;
  run(options: RunOptions): Promise<SuiteResult>;
}

/** Summary of raw samples. Percentiles interpolate linearly; p99 only with at least 100 samples. */
export interface Summary {
  readonly runs: number;
  readonly min: number;
  readonly median: number;
  readonly p90: number;
  readonly p99?: number;
  readonly max: number;
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number => {
  const rank = (sorted.length - 1) * p;
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
};

/** Rounds to 3 decimals: finer digits are noise for these figures and only clutter the JSON. */
export const round3 = (value: number): number => Math.round(value * 1000) / 1000;

/** The summary of `samples` (at least one), each figure rounded to 3 decimals. */
export const summarize = (samples: ReadonlyArray<number>): Summary => {
  if (samples.length === 0) throw new Error('summarize: no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    runs: sorted.length,
    min: round3(sorted[0]!),
    median: round3(percentile(sorted, 0.5)),
    p90: round3(percentile(sorted, 0.9)),
    ...(sorted.length >= 100 ? { p99: round3(percentile(sorted, 0.99)) } : {}),
    max: round3(sorted[sorted.length - 1]!),
  };
};

/** Where measured functions' results go, so the optimiser cannot drop the work. */
export let sink: unknown;

/**
 * Times each of `fns` `runs` times after `warmup` untimed rounds, round-robin (one call of each per round) so
 * that drift on a shared machine hits every function alike. Returns each function's samples, in ms.
 */
export const timeRuns = (fns: ReadonlyArray<() => unknown>, warmup: number, runs: number): number[][] => {
  const samples = fns.map((): number[] => []);
  for (let round = 0; round < warmup + runs; round++) {
    fns.forEach((fn, i) => {
      const start = performance.now();
      sink = fn();
      const elapsed = performance.now() - start;
      if (round >= warmup) samples[i]!.push(elapsed);
    });
  }
  sink = undefined;
  return samples;
};

/**
 * Runs `modulePath` with `args` in a child process (stdout and stderr inherited, this process's environment plus
 * `env`, the Node.js flags `nodeFlags`) and resolves with the one report it sends over IPC; rejects, naming `label`, when it
 * exits non-zero or without a report, or is killed after `timeoutMs`.
 */
export const runChildForReport = <R>(
  modulePath: string,
  args: ReadonlyArray<string>,
  timeoutMs: number,
  label: string,
  env: Readonly<Record<string, string>> = {},
  nodeFlags: ReadonlyArray<string> = [],
): Promise<R> =>
  new Promise((resolve, reject) => {
    const child = fork(modulePath, [...args], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...env },
      execArgv: [...nodeFlags],
    });
    let report: R | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('message', (message) => (report = message as R));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (report !== undefined && code === 0) resolve(report);
      else reject(new Error(`${label} exited with ${signal ?? `code ${code}`} and no report`));
    });
  });

/**
 * The result of a suite that cannot run here because the temp dir has less than `minFreeBytes` free (said on the
 * console too), or undefined when there is room.
 */
export const skipUnlessFree = (suite: string, minFreeBytes: number): SuiteResult | undefined => {
  const stats = statfsSync(os.tmpdir());
  const freeBytes = stats.bavail * stats.bsize;
  if (freeBytes >= minFreeBytes) return undefined;
  const GiB = 2 ** 30;
  const skipped =
    `only ${(freeBytes / GiB).toFixed(1)} GiB free in ${os.tmpdir()}; ` +
    `this suite needs ${(minFreeBytes / GiB).toFixed(0)} GiB`;
  console.log(`skipping ${suite}: ${skipped}`);
  return { skipped, rows: [] };
};
