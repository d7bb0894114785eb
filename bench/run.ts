/** Runs the benchmark suites, prints their tables and writes bench/results/<suite>.json and README.md. */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { addsThroughputSuite } from './adds-throughput';
import { compareWithBaseline, writeBaseline, type Measured } from './baseline';
import { writeCharts } from './charts';
import { decodeDiffSuite } from './decode-diff';
import { httpDownloadSuite } from './http-download';
import { inOwnNetwork, kserveAgent } from './kserve-agent';
import { describeFileSystem, onOwnFileSystem } from './own-file-system';
import { httpResumeSuite } from './http-resume';
import { idleRestartSuite } from './idle-restart';
import { initializerSuite } from './initializer';
import { logRedactionSuite } from './log-redaction';
import { manyModelsSuite } from './many-models';
import { nodeCacheSuite } from './node-cache';
import { parallelDownloadSuite } from './parallel-download';
import { proxySuite } from './proxy';
import { s3DownloadSuite } from './s3-download';
import { swapToLoadSuite } from './swap-to-load';
import type { Cell, Check, Row, RunOptions, Suite, SuiteResult } from './suite';

/**
 * Every suite, in run order. To add one: write `bench/<name>.ts` exporting a `Suite` (see suite.ts: a name,
 * a description and `run(options): Promise<SuiteResult>`) and append it here. The runner does the rest: CLI
 * selection, the console table, `bench/results/<name>.json` and its section of `bench/results/README.md`.
 */
const suites: ReadonlyArray<Suite> = [
  decodeDiffSuite,
  httpDownloadSuite,
  httpResumeSuite,
  initializerSuite,
  s3DownloadSuite,
  parallelDownloadSuite,
  swapToLoadSuite,
  addsThroughputSuite,
  logRedactionSuite,
  idleRestartSuite,
  manyModelsSuite,
  proxySuite,
  nodeCacheSuite,
];

/** A results file: the suite's result plus where and when it was measured. */
interface SuiteRecord extends SuiteResult {
  readonly suite: string;
  readonly description: string;
  readonly date: string;
  readonly node: string;
  readonly platform: string;
  readonly cpu: { readonly model: string; readonly count: number };
  readonly totalMemoryBytes: number;
  /** The commit measured, and whether src/ differed from it (others edit src/ while suites run). */
  readonly revision: { readonly commit: string; readonly srcDirty: boolean };
  /** os.loadavg() (1, 5, 15 min) when the suite started: other processes' load skews figures on a shared host. */
  readonly loadAverage: ReadonlyArray<number>;
  /** Where its temp dirs were (bench/own-file-system.ts): the file system is half of what a model install costs. */
  readonly fileSystem?: string;
  readonly durationSeconds: number;
  /** `quick` by default (reduced sizes, for the ratios and CI), `full` for the figures (`--full`). */
  readonly mode: 'quick' | 'full';
}

// Compiled to .bench-build/bench/run.js; results live in the source tree's bench/results (full mode) and
// bench/results/quick (quick mode: not committed, so CI runs leave the tree clean).
const fullResultsDir = path.resolve(__dirname, '..', '..', 'bench', 'results');
const baselineFile = path.resolve(__dirname, '..', '..', 'bench', 'baseline.json');
const resultsDirOf = (mode: 'quick' | 'full' | undefined): string =>
  mode === 'quick' ? path.join(fullResultsDir, 'quick') : fullResultsDir;

const revisionOf = (): SuiteRecord['revision'] => {
  const git = (...args: string[]): string =>
    execFileSync('git', args, { cwd: path.dirname(fullResultsDir), encoding: 'utf8' }).trim();
  try {
    return {
      commit: git('rev-parse', 'HEAD'),
      srcDirty: git('status', '--porcelain', '--', '../src') !== '',
    };
  } catch {
    return { commit: 'unknown', srcDirty: false };
  }
};

const formatCell = (value: Cell | undefined): string => {
  if (value === null || value === undefined) return '-';
  if (typeof value !== 'number') return String(value);
  if (Number.isInteger(value)) return String(value);
  const magnitude = Math.abs(value);
  return value.toFixed(magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3);
};

const columnsOf = (rows: ReadonlyArray<Row>): string[] => [
  ...new Set(rows.flatMap((row) => Object.keys(row))),
];

/** Rows as an aligned plain-text table (console) or a Markdown table (README). */
const table = (rows: ReadonlyArray<Row>, markdown: boolean): string => {
  const columns = columnsOf(rows);
  const cells = rows.map((row) => columns.map((column) => formatCell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: ReadonlyArray<string>): string =>
    markdown
      ? `| ${values.join(' | ')} |`
      : values.map((value, i) => (i < 2 ? value.padEnd(widths[i]!) : value.padStart(widths[i]!))).join('  ');
  const rule = markdown
    ? `|${columns.map(() => '---').join('|')}|`
    : widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(columns), rule, ...cells.map(line)].join('\n');
};

const checkLine = (check: Check): string => {
  const figures = Object.entries(check)
    .filter(([key]) => key !== 'name' && key !== 'withinBudget')
    .map(([key, value]) => `${key} ${formatCell(value)}`)
    .join(', ');
  return `${check.withinBudget ? 'PASS' : 'FAIL'}: ${check.name} (${figures})`;
};

const printResult = (record: SuiteRecord): void => {
  console.log(`\n== ${record.suite} (${record.durationSeconds.toFixed(1)} s)`);
  if (record.skipped !== undefined) console.log(`SKIPPED: ${record.skipped}`);
  if (record.rows.length > 0) console.log(table(record.rows, false));
  for (const check of record.checks ?? []) console.log(checkLine(check));
};

// Tolerant of results files written by older or other versions of this runner: missing fields are skipped.
const readmeSection = (record: Partial<SuiteRecord>): string => {
  const where = [
    record.date !== undefined ? `Measured ${record.date}` : 'Measured',
    record.node !== undefined ? `with Node ${record.node}` : '',
    record.cpu !== undefined ? `on ${record.cpu.count} x ${record.cpu.model}` : '',
    record.platform !== undefined ? `(${record.platform})` : '',
    record.durationSeconds !== undefined ? `in ${record.durationSeconds.toFixed(1)} s` : '',
    record.revision !== undefined
      ? `at ${record.revision.commit.slice(0, 7)}${record.revision.srcDirty ? ' with uncommitted changes to src/' : ''}`
      : '',
  ];
  const load =
    record.loadAverage !== undefined
      ? `; load average at start ${record.loadAverage.join(' / ')} (1 / 5 / 15 min)`
      : '';
  const disk = record.fileSystem !== undefined ? ` Its temp dirs were on ${record.fileSystem}.` : '';
  return [
    `## ${record.suite ?? 'unnamed suite'}`,
    '',
    record.description ?? '',
    '',
    `${where.filter((part) => part !== '').join(' ')}${load}.${disk}`,
    '',
    `Reproduce: \`npm run bench -- ${record.mode === 'quick' ? '' : '--full '}${record.suite ?? ''}\``,
    '',
    ...(existsSync(path.join(resultsDirOf(record.mode), `${record.suite}.svg`))
      ? [`![${record.suite} chart](${record.suite}.svg)`, '']
      : []),
    ...(record.skipped !== undefined ? [`**Skipped:** ${record.skipped}`, ''] : []),
    ...(record.rows !== undefined && record.rows.length > 0 ? [table(record.rows, true), ''] : []),
    ...(record.checks ?? []).map((check) => `- **${checkLine(check).replace(':', '**:')}`),
    ...(record.checks?.length ? [''] : []),
    ...(record.notes ?? []).map((note) => `- ${note}`),
    ...(record.notes?.length ? [''] : []),
  ].join('\n');
};

/** Rebuilds README.md from every results file present, including suites this run did not select. */
export const writeReadme = (resultsDir: string): void => {
  const sections = readdirSync(resultsDir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => {
      try {
        return readmeSection(
          JSON.parse(readFileSync(path.join(resultsDir, name), 'utf8')) as Partial<SuiteRecord>,
        );
      } catch (error) {
        return `## ${name}\n\nUnreadable: ${String(error)}\n`;
      }
    });
  const header = [
    '# Benchmark results',
    '',
    'Generated by `npm run bench` from the JSON files in this directory; do not edit by hand.',
    'Plain `npm run bench` is quick mode: reduced sizes, for the ratios CI checks (results in quick/, not committed);',
    '`npm run bench -- --full` measures the figures in this directory. One suite: `npm run bench -- --full <suite>`.',
    '',
  ];
  writeFileSync(path.join(resultsDir, 'README.md'), [...header, ...sections].join('\n'));
};

const runSuite = async (suite: Suite, options: RunOptions): Promise<SuiteRecord> => {
  const revision = revisionOf();
  const loadAverage = os.loadavg().map((load) => Math.round(load * 100) / 100);
  const started = performance.now();
  const result = await suite.run(options);
  const cpus = os.cpus();
  return {
    suite: suite.name,
    description: suite.description,
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpu: { model: cpus[0]?.model.trim() ?? 'unknown', count: cpus.length },
    totalMemoryBytes: os.totalmem(),
    revision,
    loadAverage,
    fileSystem: describeFileSystem(),
    durationSeconds: (performance.now() - started) / 1000,
    mode: options.quick ? 'quick' : 'full',
    ...result,
  };
};

const modeFlags = ['--quick', '--full', '--check', '--write-baseline'];

/**
 * `run.js [--quick|--full] [--check] [--write-baseline] [suite ...]`: quick mode unless `--full`; `--check` exits 1
 * when a ratio is more than 2x worse than bench/baseline.json in two runs of its suite (a second run is made only
 * when the first shows it); `--write-baseline` rewrites that file. Both compare
 * quick-mode ratios, so they refuse `--full`.
 */
const main = async (): Promise<void> => {
  const args = process.argv.slice(2);
  const names = args.filter((arg) => !modeFlags.includes(arg));
  const check = args.includes('--check');
  const newBaseline = args.includes('--write-baseline');
  const full = args.includes('--full');
  if (full && (args.includes('--quick') || check || newBaseline)) {
    console.error('--full measures the figures: it goes with neither --quick, --check nor --write-baseline');
    process.exitCode = 2;
    return;
  }
  const options: RunOptions = { quick: !full };
  const unknown = names.filter((name) => !suites.some((suite) => suite.name === name));
  if (unknown.length > 0) {
    console.error(
      `unknown suite(s) or flag(s): ${unknown.join(', ')}; available: ${suites.map((s) => s.name).join(', ')}; ` +
        `flags: ${modeFlags.join(' ')}`,
    );
    process.exitCode = 2;
    return;
  }
  const resultsDir = resultsDirOf(options.quick ? 'quick' : 'full');
  mkdirSync(resultsDir, { recursive: true });
  // src/command/package-version.ts reads the package.json two levels above it: the bench build needs one too.
  copyFileSync(
    path.resolve(__dirname, '..', '..', 'package.json'),
    path.resolve(__dirname, '..', 'package.json'),
  );
  // The agent is also started as the npm bin starts it: the file itself, which must be executable, as in dist/.
  chmodSync(path.resolve(__dirname, '..', 'src', 'cli.js'), 0o755);
  /** Why each suite of the last `measure` threw, by name: the first line of its error. */
  const failures = new Map<string, string>();
  const measure = async (which: ReadonlyArray<string>): Promise<Measured[]> => {
    const done: Measured[] = [];
    for (const suite of suites.filter((s) => which.length === 0 || which.includes(s.name))) {
      console.log(`\nrunning ${suite.name}${options.quick ? ' (quick)' : ''}: ${suite.description}`);
      failures.delete(suite.name);
      try {
        const record = await runSuite(suite, options);
        printResult(record);
        writeFileSync(path.join(resultsDir, `${suite.name}.json`), `${JSON.stringify(record, null, 2)}\n`);
        done.push({ suite: suite.name, result: record });
      } catch (error) {
        console.error(`suite ${suite.name} failed:`, error);
        failures.set(suite.name, String(error).split('\n')[0]!);
        process.exitCode = 1;
      }
    }
    return done;
  };
  console.log(`bench: the suites' temp dirs are on ${describeFileSystem()}`);
  const started = performance.now();
  let measured = await measure(names);
  const charts = writeCharts(resultsDir);
  writeReadme(resultsDir);
  console.log(`\nresults: ${resultsDir} (charts: ${charts.join(', ') || 'none'})`);
  console.log(`all suites: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  if (newBaseline) {
    writeBaseline(baselineFile, measured, {
      date: new Date().toISOString(),
      commit: revisionOf().commit,
      loadAverage: os.loadavg()[0]!.toFixed(2),
      fileSystem: describeFileSystem(),
      cpu: `${os.cpus().length} x ${os.cpus()[0]?.model.trim() ?? 'unknown'}`,
    });
    console.log(`baseline written: ${baselineFile}`);
  }
  if (check) {
    let comparison = compareWithBaseline(baselineFile, measured, failures);
    if (comparison.failed) {
      // A shared machine can make one run look twice as bad, or a peer miss its start: it must show twice.
      console.log(`\nfailed or more than 2x worse: ${comparison.worseSuites.join(', ')}; measuring again`);
      const again = await measure(comparison.worseSuites);
      measured = [...measured.filter(({ suite }) => !comparison.worseSuites.includes(suite)), ...again];
      comparison = compareWithBaseline(baselineFile, measured, failures);
    }
    console.log(`\nratios vs ${baselineFile}:`);
    for (const line of comparison.lines) console.log(`  ${line}`);
    if (comparison.failed) {
      console.log(
        'bench:check: a suite failed twice, or a ratio is more than 2x worse than its baseline twice',
      );
      process.exitCode = 1;
    } else {
      console.log('bench:check: every suite ran, every ratio within 2x of its baseline');
      process.exitCode = 0;
    }
  } else if (failures.size > 0)
    console.log(`\nsuites failed: ${[...failures.keys()].join(', ')} (errors above)`);
};

/**
 * Runs this bench again in a network and mount namespace of its own when it can (root, `unshare -n -m`): the KServe
 * Go agent's puller loads at localhost:8080 (bench/kserve-agent.ts), which must be ours, and no other process's
 * loopback traffic shares the namespace; the suites write to a file system of the run's own (bench/own-file-system.ts).
 * The agent is built before, outside it. Returns the exit status of that run, or undefined when the bench runs here.
 */
const inOwnNamespaces = (): number | undefined => {
  if (inOwnNetwork() || process.getuid?.() !== 0) return undefined;
  const namespaced = (script: string, ...command: string[]) =>
    spawnSync(
      'unshare',
      ['-n', '-m', 'sh', '-c', `ip link set lo up || exit 1\n${script}`, 'sh', ...command],
      {
        stdio: 'inherit',
        env: { ...process.env, MODELSYNC_BENCH_NETNS: '1' },
      },
    );
  // The Go agent builds from the Go module proxy, which the namespace cannot reach: build it (once per machine) here.
  const agent = kserveAgent();
  if (agent.why !== undefined) console.log(`bench: no KServe Go agent to run beside modelsync: ${agent.why}`);
  if (namespaced('exec "$@"', 'true').status !== 0) {
    console.log(
      'bench: no network namespace of its own (unshare -n -m refused): running here, without the Go agent',
    );
    return undefined;
  }
  const run = namespaced(
    onOwnFileSystem,
    process.execPath,
    ...process.execArgv,
    __filename,
    ...process.argv.slice(2),
  );
  if (run.status === null)
    console.log(`bench: the run in its own network namespace was ended by ${run.signal}`);
  return run.status ?? 1;
};

// Run as a script; imported (writeReadme alone), it runs nothing.
if (require.main === module) {
  // An error no suite caught (a peer's socket erroring after its suite ended, a rejection nobody awaited) would
  // end the run with exit 1 and its stack on stderr alone, which a CI excerpt may not show: say it on stdout.
  process.on('uncaughtException', (error) => {
    console.log(`bench: an error no suite caught ended the run: ${error.stack ?? String(error)}`);
    process.exit(1);
  });
  const status = inOwnNamespaces();
  if (status !== undefined) process.exit(status);
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
