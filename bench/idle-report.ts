/** The idle-restart suite's report: its targets, and the rows, checks and notes made of what the lanes measured. */
import type { PageTouchCost } from './idle-lanes';
import { round3, summarize, type Check, type Row, type SuiteResult } from './suite';

/** P5 targets. */
const maxHeapUsedMiB = 20;
const maxCpuMsPerMinute = 50;
/** An idle agent may burn at most this many times the floor watcher's CPU, the floor resyncing as often. */
const maxFloorCpuRatio = 4;
/** P6 target. */
const maxReadyMs = 1000;
/** The npm bin's idle RSS may exceed the image's way of starting the agent by at most this ratio. */
const maxBinRssRatio = 1.1;

/** The lanes, in the order their figures come. */
export type IdlerName =
  'modelsync' | 'modelsync (npm bin)' | 'modelsync (KServe drop-in)' | 'floor' | 'KServe Go agent (puller)';

/** The idle figures of one process over the window. */
export interface IdleFigures {
  readonly name: IdlerName;
  readonly rssMedianMiB: number;
  readonly rssMaxMiB: number;
  readonly heapUsedMiB?: number;
  readonly heapTotalMiB?: number;
  readonly cpuMsPerMinute: number;
}

/**
 * What P6 measured over the restarts: spawn to ready (`restartsMs`), the agent's own durations (`readyLogMs`), the
 * bare node starts paired with them (`nodeMs`), and the work redone (`downloads`, `loads`: 0 expected).
 */
export type RestartFigures = Readonly<Record<'restartsMs' | 'readyLogMs' | 'nodeMs', ReadonlyArray<number>>> &
  Readonly<Record<'downloads' | 'loads', number>>;

/** How the run was set up, for the names of the checks and the notes. */
export interface IdleSetUp {
  readonly models: number;
  readonly modelFileBytes: number;
  readonly settleMs: number;
  readonly measureMs: number;
  readonly quick: boolean;
  /** Why the Go agent's lane was not run, when it was not. */
  readonly goSkipped: string | undefined;
  /** What this machine charged for memory touched again after the window idle (`pageTouchProbe`). */
  readonly pageTouch: PageTouchCost;
}

/** The suite's result from the idle figures (modelsync, the npm bin, the drop-in, the floor, then Go's) and P6's. */
export const idleRestartReport = (
  idle: ReadonlyArray<IdleFigures>,
  { restartsMs, readyLogMs, nodeMs, downloads, loads }: RestartFigures,
  { models, modelFileBytes, settleMs, measureMs, quick, goSkipped, pageTouch }: IdleSetUp,
): Required<Pick<SuiteResult, 'rows' | 'checks' | 'notes'>> => {
  const [mineIdle, binIdle, dropInIdle, floorIdle] = idle as [
    IdleFigures,
    IdleFigures,
    IdleFigures,
    IdleFigures,
  ];
  const goIdle = idle.find((figures) => figures.name === 'KServe Go agent (puller)');
  const restart = summarize(restartsMs);
  const node = summarize(nodeMs);
  const rows: Row[] = [
    ...idle.map((figures): Row => ({ measure: 'P5 idle', ...figures })),
    {
      measure: 'P6 restart → ready',
      name: 'modelsync',
      runs: restart.runs,
      medianMs: restart.median,
      maxMs: restart.max,
      readyLogDurationMs: summarize(readyLogMs).median,
      downloads,
      loads,
    },
    {
      measure: 'P6 restart → ready',
      name: 'node -e 0',
      runs: node.runs,
      medianMs: node.median,
      maxMs: node.max,
    },
  ];
  const checks: Check[] = [
    {
      name: `P5 idle RSS ≤ the floor watcher's (${models} models)`,
      withinBudget: mineIdle.rssMedianMiB <= floorIdle.rssMedianMiB,
      ratio: round3(mineIdle.rssMedianMiB / floorIdle.rssMedianMiB),
      better: 'lower',
      rssMiB: mineIdle.rssMedianMiB,
      floorRssMiB: floorIdle.rssMedianMiB,
    },
    {
      name: "P5 idle RSS of the agent started as the npm bin within 10 % of the image's way of starting it",
      withinBudget: binIdle.rssMedianMiB <= mineIdle.rssMedianMiB * maxBinRssRatio,
      ratio: round3(binIdle.rssMedianMiB / mineIdle.rssMedianMiB),
      better: 'lower',
      rssMiB: binIdle.rssMedianMiB,
      imageRssMiB: mineIdle.rssMedianMiB,
    },
    {
      name: `P5 idle heapUsed ≤ ${maxHeapUsedMiB} MiB`,
      withinBudget: (mineIdle.heapUsedMiB ?? Infinity) <= maxHeapUsedMiB,
      // No ratio for CI: the floor's heapUsed swings 4-18 MiB with its GC's timing.
      heapUsedMiB: mineIdle.heapUsedMiB ?? null,
      floorHeapUsedMiB: floorIdle.heapUsedMiB ?? null,
    },
    ...[mineIdle, dropInIdle].flatMap((figures): Check[] => [
      {
        // No ratio for CI: what an idle process burns follows what the machine charges for memory touched after a
        // while idle (pageTouch): one commit measured 31 and 211 ms/min here on one day (docs/benchmarks.md).
        name: `P5 idle CPU ≤ ${maxCpuMsPerMinute} ms/min, ${figures.name}`,
        withinBudget: figures.cpuMsPerMinute <= maxCpuMsPerMinute,
        cpuMsPerMinute: figures.cpuMsPerMinute,
        ...pageTouch,
      },
      {
        name: `P5 idle CPU ≤ ${maxFloorCpuRatio}x the floor's, resyncing as often, ${figures.name}`,
        withinBudget: figures.cpuMsPerMinute <= floorIdle.cpuMsPerMinute * maxFloorCpuRatio,
        ratio: round3(figures.cpuMsPerMinute / floorIdle.cpuMsPerMinute),
        better: 'lower',
        cpuMsPerMinute: figures.cpuMsPerMinute,
        floorCpuMsPerMinute: floorIdle.cpuMsPerMinute,
        ...(goIdle && { goAgentCpuMsPerMinute: goIdle.cpuMsPerMinute }),
      },
    ]),
    {
      name: `P6 restart with ${models} models on disk and loaded → ready ≤ ${maxReadyMs} ms, 0 downloads, 0 loads`,
      withinBudget: restart.max <= maxReadyMs && downloads === 0 && loads === 0,
      ratio: round3(restart.median / node.median),
      better: 'lower',
      medianMs: restart.median,
      maxMs: restart.max,
      downloads,
      loads,
    },
  ];
  return {
    rows,
    checks,
    notes: [
      `Each process got the same models.json of ${models} models (${modelFileBytes / 1024} KiB each over ` +
        'http from a server in the bench process), each against its own V2 stand-in: modelsync started as ' +
        'its image starts it (`node --max-semi-space-size=1 cli.js`) as a plain sidecar (no HTTP surface), as ' +
        "the npm bin (the file itself: its `#!/usr/bin/env -S node …` line), and as KServe's webhook starts " +
        'its agent (`--enable-puller --config-dir --model-dir --component-port --port`: the agent port and ' +
        "the HTTP surface on), all with their defaults (info logs); the floor watcher, resyncing as often as the agents; and, in the bench's " +
        'own network namespace, the KServe Go agent with its puller (its stand-in on 127.0.0.1:8080; it has ' +
        `no resync)${goSkipped === undefined ? '' : ` — not run here: ${goSkipped}`}. Once every agent had ` +
        'every load request and its first resync after the burst (the stand-in heard one more index request ' +
        `than at ready: that resync repairs what the burst changed, once), they idled side by side: ` +
        `${settleMs / 1000} s to settle, then ${measureMs / 1000} s measured` +
        (quick ? ' with `--resync-interval 30s` (one resync in the window), scaled to a minute.' : '.'),
      'rss: VmRSS from /proc every second over the window (median, max); CPU: the time on a CPU of every ' +
        'thread (/proc/<pid>/task/*/schedstat, ns; else utime + stime of /proc/<pid>/stat) at the start and ' +
        'the end of the window, ms/min = their difference over the window; heapUsed and heapTotal of the Node.js processes from a preloaded probe ' +
        '(bench/memory-probe.ts: at SIGUSR2 it writes process.memoryUsage() to a file) at both ends, heapUsed ' +
        "the lower of the two readings (no GC is forced). The CPU checks' ratio is to the floor's CPU, the floor resyncing " +
        'as often as the agents; the 50 ms/min budget is reported beside what touching 16 MiB again cost a page, ' +
        'right away and after the window idle (hotUsPerPage, idleUsPerPage).',
      'P6: the agent is stopped (SIGTERM) and started again on the same dirs and stand-in; the clock runs ' +
        'from the spawn to the `start-up sync complete; ready` log line reaching the bench (readyLogDurationMs: ' +
        "the agent's own durationMs from start-up to ready). downloads = `model downloading` logs, loads = " +
        'load requests at the stand-in, both summed over the restarts and 0.5 s after each ready. ratio = ' +
        "median restart / median spawn-to-exit of `node -e 0` (the runtime's own start-up), paired per restart.",
    ],
  };
};
