/** Suite adds-throughput: the agent (startAgent, real edges) started on a config of N models, until every one is loaded. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { agentNodeFlags } from '../src/command/node-flags';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { downloadConcurrency, loadConcurrency, type DriverReport } from './adds-driver';
import type { FloorReport } from './copy-post-floor';
import { countListenerWarnings } from './listener-warnings';
import { measureSwapAdds, swapAddsFileBytes, type SwapAddsRound } from './one-swap-adds';
import { rssSampleEveryMs } from './rss';
import {
  round3,
  runChildForReport,
  summarize,
  type Check,
  type Row,
  type RunOptions,
  type Suite,
  type SuiteResult,
} from './suite';

const MiB = 2 ** 20;
// The small size runs a few times (a fresh child each, so JIT warm-up is in every run); the row is the median run.
// Each run of the agent is paired with a run of the plain copy+POST script (the floor), the order alternating.
const fullSizes = [
  { count: 1_000, runs: 3 },
  { count: 10_000, runs: 1 },
];
const quickSizes = [{ count: 1_000, runs: 3 }];
/** P3: the agent's ops/s at least this share of the floor's. */
const minFloorShare = 0.8;
/** P3: no MaxListenersExceededWarning at these caps (download and load), over this many models (quick: half). */
const warningCaps = 64;
const warningModels = 1_000;
const modelFileBytes = 4096;
const childTimeoutMs = 300_000;
/** Models added in one swap, modelsync beside the KServe Go agent's puller, and the rounds of each (quick: 3). */
const swapAddsModels = 1_000;
const swapAddsRounds = { full: 5, quick: 3 };
/** The checks against the Go puller: wall time at most this share of its, CPU at most this. */
const maxGoTimeShare = 1.0;
const maxGoCpuShare = 1.5;

/** Runs this module as the driver in a child process, so its memory figures are the loader's alone. */
const runChild = (count: number, url: string, modelDir: string, sourceDir: string): Promise<DriverReport> =>
  runChildForReport<DriverReport>(
    path.join(__dirname, 'adds-driver.js'),
    [String(count), url, modelDir, sourceDir],
    childTimeoutMs,
    `${count} Adds: child`,
    // The agent's Node.js flags, as its image runs it (src/command/node-flags.ts); the floor script runs with none.
    {},
    agentNodeFlags,
  );

interface Measured {
  readonly report: DriverReport;
  readonly maxConcurrentLoads: number;
  readonly completeLoads: number;
  /** The floor's run paired with this one, and the agent's ops/s over the floor's. */
  readonly floor: FloorReport;
  readonly floorMaxConcurrentLoads: number;
  readonly vsFloor: number;
}

/** The plain copy+POST script on `count` models at the same caps, in its own child, against its own stand-in. */
const runFloor = async (count: number, root: string, sourceDir: string) => {
  const modelDir = path.join(root, 'floor-models');
  mkdirSync(modelDir);
  // No model dir check: the plain script writes no marker (the agent's stand-in checks each load's dir).
  const standIn = await startV2ModelServer({ loadDelayMs: 0 });
  try {
    const floor = await runChildForReport<FloorReport>(
      path.join(__dirname, 'copy-post-floor.js'),
      [
        count,
        standIn.url,
        modelDir,
        path.join(sourceDir, 'model.bin'),
        downloadConcurrency,
        loadConcurrency,
      ].map(String),
      childTimeoutMs,
      `${count} Adds: floor child`,
    );
    if (floor.failed > 0 || standIn.loaded.size !== count)
      throw new Error(`floor: ${floor.failed} failed loads, ${standIn.loaded.size} of ${count} loaded`);
    return { floor, floorMaxConcurrentLoads: standIn.maxConcurrentLoads };
  } finally {
    await standIn.close();
  }
};

const measure = async (count: number, floorFirst: boolean): Promise<Measured> => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-adds-'));
  const modelDir = path.join(root, 'models');
  const sourceDir = path.join(root, 'source');
  mkdirSync(sourceDir);
  writeFileSync(path.join(sourceDir, 'model.bin'), Buffer.alloc(modelFileBytes, 7));
  const standIn = await startV2ModelServer({ modelDir, loadDelayMs: 0 });
  try {
    const floorBefore = floorFirst ? await runFloor(count, root, sourceDir) : undefined;
    const report = await runChild(count, standIn.url, modelDir, sourceDir);
    const floorRun = floorBefore ?? (await runFloor(count, root, sourceDir));
    return {
      report,
      maxConcurrentLoads: standIn.maxConcurrentLoads,
      completeLoads: standIn.loads.filter((load) => load.complete && load.status === 200).length,
      ...floorRun,
      vsFloor: floorRun.floor.seconds / report.seconds,
    };
  } finally {
    await standIn.close();
    const cleanup = performance.now();
    rmSync(root, { recursive: true, force: true });
    console.log(`  removed ${count} model dirs in ${((performance.now() - cleanup) / 1000).toFixed(1)} s`);
  }
};

/** The adds-throughput suite. */
export const addsThroughputSuite: Suite = {
  name: 'adds-throughput',
  description:
    'Throughput of N Add ops at once: the agent (startAgent) started on a models.json listing N models, with the ' +
    'real edges (modelDirStore on a temp dir, local storage, v2ModelServer against the V2 stand-in with no load ' +
    'delay) at the default concurrency ' +
    `(download ${downloadConcurrency}, load ${loadConcurrency}), until every model is loaded; each run in its ` +
    'own child process.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    const results: { readonly count: number; readonly runs: Measured[]; readonly median: Measured }[] = [];
    for (const { count, runs } of quick ? quickSizes : fullSizes) {
      const measuredRuns: Measured[] = [];
      for (let run = 0; run < runs; run++) {
        const measured = await measure(count, run % 2 === 1);
        const { report } = measured;
        console.log(
          `  ${count} Adds: ${(count / report.seconds).toFixed(0)} ops/s in ${report.seconds.toFixed(1)} s; ` +
            `floor ${(count / measured.floor.seconds).toFixed(0)} ops/s`,
        );
        if (report.loaded !== count || measured.completeLoads !== count) {
          throw new Error(
            `${count} Adds: ${report.loaded} Loaded events, ${measured.completeLoads} complete loads, ` +
              `${report.failed} failed`,
          );
        }
        measuredRuns.push(measured);
      }
      const bySpeed = [...measuredRuns].sort((a, b) => a.report.seconds - b.report.seconds);
      results.push({ count, runs: measuredRuns, median: bySpeed[Math.floor(bySpeed.length / 2)]! });
    }
    const opsPerSecond = (measured: Measured): number => measured.report.count / measured.report.seconds;
    const rows: Row[] = results.map(({ runs, median: { report, maxConcurrentLoads } }) => ({
      adds: report.count,
      variant: 'modelsync',
      runs: runs.length,
      opsPerSecond: round3(report.count / report.seconds),
      minOpsPerSecond: round3(Math.min(...runs.map(opsPerSecond))),
      maxOpsPerSecond: round3(Math.max(...runs.map(opsPerSecond))),
      seconds: round3(report.seconds),
      msPerModel: round3((report.seconds * 1000) / report.count),
      retries: report.retries,
      retryTailSeconds: round3(report.seconds - report.lastFirstTrySeconds),
      childCpuPercent: round3((100 * (report.cpuUserSeconds + report.cpuSystemSeconds)) / report.seconds),
      childSystemPercent: round3((100 * report.cpuSystemSeconds) / report.seconds),
      startRssMiB: round3(report.startRssBytes / MiB),
      peakRssMiB: round3(report.peakRssBytes / MiB),
      maxRssMiB: round3(report.maxRssBytes / MiB),
      downloadHighWater: report.downloadHighWater,
      loadHighWater: report.loadHighWater,
      serverMaxConcurrentLoads: maxConcurrentLoads,
    }));
    for (const { count, runs } of results) {
      const floorSpeed = summarize(runs.map((m) => count / m.floor.seconds));
      rows.push({
        adds: count,
        runs: runs.length,
        variant: 'floor: copy+POST script',
        opsPerSecond: floorSpeed.median,
        minOpsPerSecond: floorSpeed.min,
        maxOpsPerSecond: floorSpeed.max,
        downloadHighWater: Math.max(...runs.map((m) => m.floor.downloadHighWater)),
        loadHighWater: Math.max(...runs.map((m) => m.floor.loadHighWater)),
        serverMaxConcurrentLoads: Math.max(...runs.map((m) => m.floorMaxConcurrentLoads)),
      });
    }
    console.log(`  ${swapAddsModels} models added in one swap, beside the KServe Go agent's puller`);
    const swapAdds = await measureSwapAdds(
      swapAddsModels,
      quick ? swapAddsRounds.quick : swapAddsRounds.full,
    );
    rows.push(...swapAddsRows(swapAdds.rounds));
    const warningCount = quick ? warningModels / 2 : warningModels;
    console.log(`  ${warningCount} models at caps ${warningCaps}/${warningCaps}, counting listener warnings`);
    const listeners = await countListenerWarnings(warningCount, warningCaps);
    const floorChecks: Check[] = results.map(({ count, runs }) => {
      const ratio = round3(summarize(runs.map((m) => m.vsFloor)).median);
      return {
        name: `P3 ${count} Adds: ops/s ≥ ${minFloorShare}x the copy+POST script at caps ${downloadConcurrency}/${loadConcurrency}`,
        withinBudget: ratio >= minFloorShare,
        ratio,
        better: 'higher',
        pairs: runs.length,
      };
    });
    const checks: Check[] = results.map(({ count, runs }) => {
      const downloadHighWater = Math.max(...runs.map((m) => m.report.downloadHighWater));
      const loadHighWater = Math.max(...runs.map((m) => m.report.loadHighWater));
      const serverMaxConcurrentLoads = Math.max(...runs.map((m) => m.maxConcurrentLoads));
      return {
        name: `${count} Adds: downloads and loads in flight stay within the caps (every run)`,
        withinBudget:
          downloadHighWater <= downloadConcurrency &&
          loadHighWater <= loadConcurrency &&
          serverMaxConcurrentLoads <= loadConcurrency,
        downloadHighWater,
        downloadCap: downloadConcurrency,
        serverMaxConcurrentLoads,
        loadCap: loadConcurrency,
      };
    });
    checks.push(...floorChecks, ...swapAddsChecks(swapAdds.rounds), {
      name: `P3 no MaxListenersExceededWarning at caps ${warningCaps}/${warningCaps} (agent process, through SIGTERM)`,
      withinBudget: listeners.warnings === 0 && listeners.loaded === warningCount,
      warnings: listeners.warnings,
      models: warningCount,
      loaded: listeners.loaded,
      seconds: round3(listeners.seconds),
      firstWarning: listeners.firstWarning ?? null,
    });
    return {
      rows,
      checks,
      notes: [
        `${swapAddsModels} models in one swap (bench/one-swap-adds.ts): the agent process (node src/cli.js, defaults), ` +
          "the KServe Go agent's puller (v0.19.0, `--enable-puller`) and the floor watcher (bench/floor-watcher.ts: " +
          'fs.watch, then for every new model GET + mkdir + writeFile + POST, all at once over at most 32 kept-alive ' +
          'node:http connections, ' +
          'no checks, no marker, no durability: the least a Node.js sidecar can do; floorOverGo its figure over the ' +
          "Go agent's), and that watcher with `--crash-safe` (each model written into a staging dir of its own with " +
          'a SUCCESS marker, renamed into place, one journal line appended an event-loop turn, one log line: the least ' +
          'a crash-safe one can do; crashSafeFloorOverGo), each on a config dir of `[]` and a fresh ' +
          `model dir, each round all (the order turning); one kubelet swap lists ${swapAddsModels} models, each one ` +
          `${swapAddsFileBytes / 1024} KiB file on an http store in the bench process; seconds = swap to the last ` +
          "model's load request at the same V2 stand-in on 127.0.0.1:8080 (checking each loaded dir holds a " +
          'SUCCESS marker); cpuSeconds = utime + stime of the puller process (/proc/<pid>/stat) over that time. ' +
          'Ratios: the medians over the rounds. ' +
          (swapAdds.goMissing === undefined
            ? ''
            : `The Go lane is missing here (${swapAdds.goMissing}): no check.`),
        'The floor (bench/copy-post-floor.ts, its own child, its own stand-in without the model dir check): for ' +
          `each model mkdir + copyFile into the model dir and POST the V2 load over keep-alive node:http, at most ` +
          `${downloadConcurrency} copies and ${loadConcurrency} POSTs at once. Each agent run is paired with a ` +
          'floor run on the same machine moments before or after (alternating); ratio = median over the pairs ' +
          "of the floor's seconds / the agent's seconds (= the agent's ops/s over the floor's).",
        `Listener warnings: the real agent process (node src/cli.js) at --download-concurrency ${warningCaps} ` +
          `--load-concurrency ${warningCaps} on ${warningModels} local models (quick: ${warningModels / 2}), stopped ` +
          'with SIGTERM once all are loaded; MaxListenersExceededWarning counted in its stderr.',
        'opsPerSecond = Adds / seconds of the median run (min/max over the runs), from subscribing startAgent on a fixed config of N models to its completion (every model ' +
          'Loaded, checked: as many Loaded events and complete 200 loads at the stand-in as Adds, none failed).',
        `Each model: one ${modelFileBytes / 1024} KiB file copied from a shared local dir into a staging dir, ` +
          'the marker with its file manifest, rename into place (the flush runs in the background), the load ' +
          'journal entry, POST .../load to the stand-in (in the parent process, so its CPU competes on this ' +
          '2-core machine). Logs at error level (retries are counted from status events).',
        `startRssMiB: child RSS before the run (modules loaded, config text built); peakRss: highest RSS sampled every ` +
          `${rssSampleEveryMs} ms; maxRss: process.resourceUsage().maxRSS at the end.`,
        'downloadHighWater / loadHighWater: loader.slots.*.highWater(); serverMaxConcurrentLoads: the ' +
          "stand-in's maxConcurrentLoads. childCpuPercent: the child's user + system CPU over the run's wall " +
          'time (100 = one core; libuv pool threads included); childSystemPercent: its system part.',
        'retries: Retrying status events (each waits a backoff of 0.5 s and more before the next attempt); ' +
          'retryTailSeconds: from the last Loaded of a model that needed no retry to the end of the run, ' +
          'i.e. the time spent waiting for retried models alone.',
        ...results.map(({ count, runs }) => {
          const reasons: Record<string, number> = {};
          for (const { report } of runs) {
            for (const [reason, n] of Object.entries(report.retryReasons))
              reasons[reason] = (reasons[reason] ?? 0) + n;
          }
          const listed = Object.entries(reasons)
            .sort(([, a], [, b]) => b - a)
            .map(([reason, n]) => `${n} x "${reason}"`);
          return `${count} Adds, retries over ${runs.length} run(s): ${listed.length > 0 ? listed.join('; ') : 'none'}.`;
        }),
      ],
    };
  },
};

/** How each puller is named in the rows, in the rows' order. */
const pullerLabels: Readonly<Record<SwapAddsRound['puller'], string>> = {
  modelsync: 'modelsync',
  'kserve-agent': 'KServe Go agent',
  floor: 'floor watcher (Node.js, no checks)',
  'floor-crash-safe': 'floor watcher, crash-safe (staging dir, marker, rename, journal)',
};

/** The rows of the one-swap rounds: per puller, the median, min and max over its rounds. */
const swapAddsRows = (rounds: ReadonlyArray<SwapAddsRound>): Row[] =>
  (Object.keys(pullerLabels) as Array<SwapAddsRound['puller']>).flatMap((puller) => {
    const mine = rounds.filter((round) => round.puller === puller);
    if (mine.length === 0) return [];
    const seconds = summarize(mine.map((round) => round.seconds));
    const cpu = summarize(mine.map((round) => round.cpuSeconds));
    return [
      {
        adds: swapAddsModels,
        variant: `${pullerLabels[puller]}: one swap → all loaded`,
        runs: mine.length,
        seconds: seconds.median,
        minSeconds: seconds.min,
        maxSeconds: seconds.max,
        cpuSeconds: cpu.median,
        minCpuSeconds: cpu.min,
        maxCpuSeconds: cpu.max,
        completeLoads: Math.min(...mine.map((round) => round.completeLoads)),
      },
    ];
  });

/**
 * The checks against the Go puller (none when it did not run): time and CPU, medians over the rounds; the floor
 * watchers' figures beside them, and their own ratios to the Go agent's (what Node.js itself costs for the work, and
 * what it costs with crash safety paid as modelsync pays it: a staging dir, a marker, a rename and a journal line).
 */
const swapAddsChecks = (rounds: ReadonlyArray<SwapAddsRound>): Check[] => {
  const of = (puller: SwapAddsRound['puller']) => rounds.filter((round) => round.puller === puller);
  const mine = of('modelsync');
  const go = of('kserve-agent');
  const floor = of('floor');
  const crashSafe = of('floor-crash-safe');
  if (go.length === 0) return [];
  const median = (list: ReadonlyArray<SwapAddsRound>, figure: (round: SwapAddsRound) => number): number =>
    summarize(list.map(figure)).median;
  const complete = mine.every((round) => round.completeLoads === swapAddsModels);
  const check = (what: string, figure: (round: SwapAddsRound) => number, share: number): Check => {
    const ratio = round3(median(mine, figure) / median(go, figure));
    return {
      name: `${swapAddsModels} models in one swap → all loaded: ${what} ≤ ${share}x the KServe Go agent's`,
      withinBudget: ratio <= share && complete,
      ratio,
      better: 'lower',
      modelsync: median(mine, figure),
      goAgent: median(go, figure),
      floor: median(floor, figure),
      floorOverGo: round3(median(floor, figure) / median(go, figure)),
      crashSafeFloorOverGo: round3(median(crashSafe, figure) / median(go, figure)),
    };
  };
  return [
    check('time', (round) => round.seconds, maxGoTimeShare),
    check('CPU', (round) => round.cpuSeconds, maxGoCpuShare),
  ];
};
