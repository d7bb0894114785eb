/** Suite idle-restart: the real agent idle after loading 1k models beside the floor watcher (P5), then restarted (P6). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { sleep } from '../src/testing/wait';
import type { CliProcess } from '../test/helpers/cli-process';
import {
  cliPath,
  loadArrivals,
  modelsJson,
  readProbe,
  sampleRssOf,
  startAgentProcess,
  startFloorProcess,
  startModelStore,
  stopProcess,
  type ProbeReading,
} from './agent-fixture';
import {
  round3,
  summarize,
  type Check,
  type Row,
  type RunOptions,
  type Suite,
  type SuiteResult,
} from './suite';

const MiB = 2 ** 20;
const models = 1_000;
const modelFileBytes = 4096;
const startTimeoutMs = 120_000;
const timing = {
  full: { settleMs: 30_000, measureMs: 60_000, restarts: 3 },
  quick: { settleMs: 5_000, measureMs: 10_000, restarts: 2 },
};
/** P5 targets. */
const maxHeapUsedMiB = 20;
const maxCpuMsPerMinute = 50;
/** P6 target. */
const maxReadyMs = 1000;
/** The npm bin's idle RSS may exceed the image's way of starting the agent by at most this ratio. */
const maxBinRssRatio = 1.1;

/** One watcher idling: its process, probe file and what was read over the measured window. */
interface Idler {
  readonly name: 'modelsync' | 'modelsync (npm bin)' | 'floor';
  readonly process: CliProcess;
  readonly probeFile: string;
}

/** The idle figures of one process over the window. */
interface IdleFigures {
  readonly name: Idler['name'];
  readonly rssMedianMiB: number;
  readonly rssMaxMiB: number;
  readonly heapUsedMiB: number;
  readonly heapTotalMiB: number;
  readonly cpuMsPerMinute: number;
}

const figuresOf = (
  idler: Idler,
  rss: number[],
  start: ProbeReading,
  end: ProbeReading,
  minutes: number,
): IdleFigures => {
  const cpuMicros = (reading: ProbeReading): number => reading.cpuUserMicros + reading.cpuSystemMicros;
  const rssSummary = summarize(rss.map((bytes) => bytes / MiB));
  return {
    name: idler.name,
    rssMedianMiB: rssSummary.median,
    rssMaxMiB: rssSummary.max,
    // No GC is forced: the lower of the two readings is the closer to the live heap.
    heapUsedMiB: round3(Math.min(start.heapUsed, end.heapUsed) / MiB),
    heapTotalMiB: round3(end.heapTotal / MiB),
    cpuMsPerMinute: round3((cpuMicros(end) - cpuMicros(start)) / 1000 / minutes),
  };
};

/** Spawn to exit of `node -e 0`: the runtime's own start-up, the floor of a restart. */
const bareNodeMs = async (): Promise<number> => {
  const started = performance.now();
  await promisify(execFile)(process.execPath, ['-e', '0']);
  return performance.now() - started;
};

/** The idle-restart suite. */
export const idleRestartSuite: Suite = {
  name: 'idle-restart',
  description:
    `The real agent (node src/cli.js, and src/cli.js as the npm bin) after loading ${models} models over http, idle beside the floor watcher ` +
    'after the same models (RSS, heapUsed, CPU over the same window), then restarted with them on disk and ' +
    'loaded: time to ready, downloads and loads (none expected), vs a bare `node -e 0`.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    if (!existsSync(cliPath))
      return { skipped: `${cliPath} is missing: run through \`npm run bench\``, rows: [] };
    const { settleMs, measureMs, restarts } = quick ? timing.quick : timing.full;
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-idle-'));
    const store = await startModelStore(modelFileBytes);
    const lanes = (['modelsync', 'bin', 'floor'] as const).map((name) => {
      const dir = path.join(root, name);
      mkdirSync(path.join(dir, 'models'), { recursive: true });
      atomicWrite(path.join(dir, 'config'), { 'models.json': modelsJson(models, store.url) });
      return { name, configDir: path.join(dir, 'config'), modelDir: path.join(dir, 'models') };
    });
    const [mine, binLane, floorLane] = lanes as [(typeof lanes)[0], (typeof lanes)[0], (typeof lanes)[0]];
    const mineLoads = loadArrivals();
    const binLoads = loadArrivals();
    const floorLoads = loadArrivals();
    const standIn = await startV2ModelServer({ modelDir: mine.modelDir, onRequest: mineLoads.observe });
    const binStandIn = await startV2ModelServer({ modelDir: binLane.modelDir, onRequest: binLoads.observe });
    const floorStandIn = await startV2ModelServer({ onRequest: floorLoads.observe });
    const argsOf = (lane: (typeof lanes)[0], serverUrl: string): string[] => [
      ...['--config-dir', lane.configDir, '--model-dir', lane.modelDir, '--server-url', serverUrl],
    ];
    const agentArgs = argsOf(mine, standIn.url);
    const running: CliProcess[] = [];
    try {
      const idlers: Idler[] = [];
      const agentProbe = path.join(root, 'modelsync.probe');
      const agent = startAgentProcess(agentArgs, { probeFile: agentProbe });
      running.push(agent);
      await mineLoads.distinct(models, startTimeoutMs);
      await agent.waitForLog('start-up sync complete; ready', startTimeoutMs);
      idlers.push({ name: 'modelsync', process: agent, probeFile: agentProbe });
      const binProbe = path.join(root, 'bin.probe');
      const bin = startAgentProcess(argsOf(binLane, binStandIn.url), { probeFile: binProbe, asBin: true });
      running.push(bin);
      await binLoads.distinct(models, startTimeoutMs);
      await bin.waitForLog('start-up sync complete; ready', startTimeoutMs);
      idlers.push({ name: 'modelsync (npm bin)', process: bin, probeFile: binProbe });
      const floorProbe = path.join(root, 'floor.probe');
      const floor = startFloorProcess(floorLane.configDir, floorLane.modelDir, floorStandIn.url, floorProbe);
      running.push(floor);
      await floorLoads.distinct(models, startTimeoutMs);
      idlers.push({ name: 'floor', process: floor, probeFile: floorProbe });
      console.log(
        `  all three loaded ${models} models; settling ${settleMs / 1000} s, measuring ${measureMs / 1000} s`,
      );
      await sleep(settleMs);
      const starts = await Promise.all(idlers.map((idler) => readProbe(idler.process, idler.probeFile)));
      const rss = await sampleRssOf(
        idlers.map((idler) => idler.process.child.pid!),
        measureMs,
        1000,
      );
      const ends = await Promise.all(idlers.map((idler) => readProbe(idler.process, idler.probeFile)));
      const idle = idlers.map((idler, i) =>
        figuresOf(idler, rss[i]!, starts[i]!, ends[i]!, measureMs / 60_000),
      );
      await stopProcess(floor);
      await stopProcess(bin);

      // P6: restarts with every model on disk and loaded, each paired with a bare node start-up.
      await stopProcess(agent);
      const restartsMs: number[] = [];
      const readyLogMs: number[] = [];
      const nodeMs: number[] = [];
      let downloads = 0;
      let loads = 0;
      for (let i = 0; i < restarts; i++) {
        nodeMs.push(await bareNodeMs());
        const loadsBefore = mineLoads.requests();
        const started = performance.now();
        const again = startAgentProcess(agentArgs);
        running.push(again);
        const ready = await again.waitForLog('start-up sync complete; ready', startTimeoutMs);
        restartsMs.push(performance.now() - started);
        readyLogMs.push(Number(ready['durationMs']));
        await sleep(500); // anything the agent would still do after ready counts too
        downloads += again.logs.filter((log) => log.msg === 'model downloading').length;
        loads += mineLoads.requests() - loadsBefore;
        await stopProcess(again);
      }
      const [mineIdle, binIdle, floorIdle] = idle as [IdleFigures, IdleFigures, IdleFigures];
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
          withinBudget: mineIdle.heapUsedMiB <= maxHeapUsedMiB,
          // No ratio for CI: the floor's heapUsed swings 4-18 MiB with its GC's timing.
          heapUsedMiB: mineIdle.heapUsedMiB,
          floorHeapUsedMiB: floorIdle.heapUsedMiB,
        },
        {
          name: `P5 idle CPU ≤ ${maxCpuMsPerMinute} ms/min`,
          withinBudget: mineIdle.cpuMsPerMinute <= maxCpuMsPerMinute,
          cpuMsPerMinute: mineIdle.cpuMsPerMinute,
          floorCpuMsPerMinute: floorIdle.cpuMsPerMinute,
        },
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
          `Three processes got the same models.json of ${models} models (${modelFileBytes / 1024} KiB each over ` +
            'http from a server in the bench process), each against its own V2 stand-in: modelsync started as ' +
            'its image starts it (`node --max-semi-space-size=1 cli.js`), modelsync started as the npm bin ' +
            '(the file itself: its `#!/usr/bin/env -S node …` line), both with their defaults (info logs), and ' +
            'the floor watcher. Once each had every load request, they idled side by side: ' +
            `${settleMs / 1000} s to settle, then ${measureMs / 1000} s measured.`,
          'rss: VmRSS from /proc every second over the window (median, max); heapUsed, heapTotal and CPU from ' +
            'a preloaded probe (bench/memory-probe.ts: at SIGUSR2 it writes process.memoryUsage() and ' +
            'process.cpuUsage() to a file) at the start and the end of the window; heapUsed is the lower of the ' +
            'two readings (no GC is forced). CPU ms/min = (user + system) over the window.',
          'P6: the agent is stopped (SIGTERM) and started again on the same dirs and stand-in; the clock runs ' +
            'from the spawn to the `start-up sync complete; ready` log line reaching the bench (readyLogDurationMs: ' +
            "the agent's own durationMs from start-up to ready). downloads = `model downloading` logs, loads = " +
            'load requests at the stand-in, both summed over the restarts and 0.5 s after each ready. ratio = ' +
            "median restart / median spawn-to-exit of `node -e 0` (the runtime's own start-up), paired per restart.",
        ],
      };
    } finally {
      for (const process of running) await stopProcess(process);
      await standIn.close();
      await floorStandIn.close();
      await binStandIn.close();
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};
