/** Suite idle-restart: the real agent idle after loading 1k models beside the floor watcher (P5), then restarted (P6). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer, type V2Request } from '../src/testing/v2-model-server';
import { sleep, waitFor } from '../src/testing/wait';
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
import { dropInPort, kserveDropInArgs, procCpuMs, startGoIdler, type GoIdler } from './idle-lanes';
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
/**
 * Full: the default resync (60 s), so the minute measured holds one resync. Quick: a resync every 30 s and half a
 * minute measured, scaled to a minute: twice the default's resyncs, an upper bound. Either way the window opens
 * `settleMs` after each agent's first resync after the burst (which repairs what the burst changed, once).
 */
const timing = {
  full: { settleMs: 5_000, measureMs: 60_000, restarts: 3, resyncArgs: [] as string[] },
  quick: { settleMs: 2_000, measureMs: 30_000, restarts: 2, resyncArgs: ['--resync-interval', '30s'] },
};
const firstResyncTimeoutMs = 120_000;
/** P5 targets. */
const maxHeapUsedMiB = 20;
const maxCpuMsPerMinute = 50;
/** P6 target. */
const maxReadyMs = 1000;
/** The npm bin's idle RSS may exceed the image's way of starting the agent by at most this ratio. */
const maxBinRssRatio = 1.1;

/** One watcher idling: its pid, and its process and probe file when it is a Node.js one. */
interface Idler {
  readonly name:
    'modelsync' | 'modelsync (npm bin)' | 'modelsync (KServe drop-in)' | 'floor' | 'KServe Go agent (puller)';
  readonly pid: number;
  readonly probed?: { readonly process: CliProcess; readonly probeFile: string };
}

/** The idle figures of one process over the window. */
interface IdleFigures {
  readonly name: Idler['name'];
  readonly rssMedianMiB: number;
  readonly rssMaxMiB: number;
  readonly heapUsedMiB?: number;
  readonly heapTotalMiB?: number;
  readonly cpuMsPerMinute: number;
}

/** What was read of one idler at the start and the end of the window. */
interface Reading {
  readonly cpuMs: number;
  readonly probe?: ProbeReading;
}

const readingOf = async (idler: Idler): Promise<Reading> => ({
  cpuMs: procCpuMs(idler.pid),
  ...(idler.probed && { probe: await readProbe(idler.probed.process, idler.probed.probeFile) }),
});

const figuresOf = (
  idler: Idler,
  rss: number[],
  start: Reading,
  end: Reading,
  minutes: number,
): IdleFigures => {
  const rssSummary = summarize(rss.map((bytes) => bytes / MiB));
  return {
    name: idler.name,
    rssMedianMiB: rssSummary.median,
    rssMaxMiB: rssSummary.max,
    // No GC is forced: the lower of the two readings is the closer to the live heap.
    ...(start.probe &&
      end.probe && {
        heapUsedMiB: round3(Math.min(start.probe.heapUsed, end.probe.heapUsed) / MiB),
        heapTotalMiB: round3(end.probe.heapTotal / MiB),
      }),
    cpuMsPerMinute: round3((end.cpuMs - start.cpuMs) / minutes),
  };
};

/** The load requests and index requests (each resync asks the index once) a stand-in heard. */
const heard = () => {
  const loads = loadArrivals();
  let indexRequests = 0;
  const onRequest = (request: V2Request): void => {
    loads.observe(request);
    if (request.path === '/v2/repository/index') indexRequests++;
  };
  return { loads, onRequest, indexRequests: () => indexRequests };
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
    `The real agent (node src/cli.js as a sidecar and as the KServe drop-in, and src/cli.js as the npm bin) after loading ${models} models over http, idle beside the floor watcher ` +
    'and the KServe Go agent after the same models (RSS, heapUsed, CPU over the same window), then restarted with them on disk and ' +
    'loaded: time to ready, downloads and loads (none expected), vs a bare `node -e 0`.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    if (!existsSync(cliPath))
      return { skipped: `${cliPath} is missing: run through \`npm run bench\``, rows: [] };
    const { settleMs, measureMs, restarts, resyncArgs } = quick ? timing.quick : timing.full;
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-idle-'));
    const store = await startModelStore(modelFileBytes);
    const laneOf = (name: string) => {
      const dir = path.join(root, name);
      mkdirSync(path.join(dir, 'models'), { recursive: true });
      atomicWrite(path.join(dir, 'config'), { 'models.json': modelsJson(models, store.url) });
      return { dir, configDir: path.join(dir, 'config'), modelDir: path.join(dir, 'models') };
    };
    const [mine, binLane, dropInLane, floorLane] = ['modelsync', 'bin', 'drop-in', 'floor'].map(laneOf) as [
      ReturnType<typeof laneOf>,
      ReturnType<typeof laneOf>,
      ReturnType<typeof laneOf>,
      ReturnType<typeof laneOf>,
    ];
    const [mineHeard, binHeard, dropInHeard, floorHeard] = [heard(), heard(), heard(), heard()];
    const mineLoads = mineHeard.loads;
    const standIn = await startV2ModelServer({ modelDir: mine.modelDir, onRequest: mineHeard.onRequest });
    const binStandIn = await startV2ModelServer({
      modelDir: binLane.modelDir,
      onRequest: binHeard.onRequest,
    });
    const dropInStandIn = await startV2ModelServer({
      modelDir: dropInLane.modelDir,
      onRequest: dropInHeard.onRequest,
    });
    const floorStandIn = await startV2ModelServer({ onRequest: floorHeard.onRequest });
    const argsOf = (lane: typeof mine, serverUrl: string): string[] => [
      ...['--config-dir', lane.configDir, '--model-dir', lane.modelDir, '--server-url', serverUrl],
      ...resyncArgs,
    ];
    const agentArgs = argsOf(mine, standIn.url);
    const running: CliProcess[] = [];
    let goIdler: GoIdler | undefined;
    try {
      const idlers: Idler[] = [];
      /** Index requests each agent's stand-in had heard when it was ready: its first resync after is one more. */
      const atReady: Array<{ readonly heard: ReturnType<typeof heard>; readonly indexRequests: number }> = [];
      const startAgentLane = async (
        name: Idler['name'],
        args: string[],
        laneHeard: ReturnType<typeof heard>,
        options: { asBin?: boolean; portInArgs?: boolean } = {},
      ): Promise<CliProcess> => {
        const probeFile = path.join(root, `${idlers.length}.probe`);
        const agent = startAgentProcess(args, { probeFile, ...options });
        running.push(agent);
        await laneHeard.loads.distinct(models, startTimeoutMs);
        await agent.waitForLog('start-up sync complete; ready', startTimeoutMs);
        atReady.push({ heard: laneHeard, indexRequests: laneHeard.indexRequests() });
        idlers.push({ name, pid: agent.child.pid!, probed: { process: agent, probeFile } });
        return agent;
      };
      // As a plain sidecar (no HTTP surface), as the npm bin, and as KServe's webhook starts its agent (the
      // agent port and the surface on --port, the model server on --component-port).
      const agent = await startAgentLane('modelsync', agentArgs, mineHeard);
      await startAgentLane('modelsync (npm bin)', argsOf(binLane, binStandIn.url), binHeard, { asBin: true });
      const dropInArgs = kserveDropInArgs(
        dropInLane.configDir,
        dropInLane.modelDir,
        Number(new URL(dropInStandIn.url).port),
        await dropInPort(),
      );
      await startAgentLane('modelsync (KServe drop-in)', [...dropInArgs, ...resyncArgs], dropInHeard, {
        portInArgs: true,
      });
      const floorProbe = path.join(root, 'floor.probe');
      const floor = startFloorProcess(floorLane.configDir, floorLane.modelDir, floorStandIn.url, floorProbe);
      running.push(floor);
      await floorHeard.loads.distinct(models, startTimeoutMs);
      idlers.push({
        name: 'floor',
        pid: floor.child.pid!,
        probed: { process: floor, probeFile: floorProbe },
      });
      const go = await startGoIdler(path.join(root, 'go'), models, store.url, startTimeoutMs);
      const goSkipped = typeof go === 'string' ? go : undefined;
      if (typeof go !== 'string') {
        goIdler = go;
        idlers.push({ name: 'KServe Go agent (puller)', pid: go.agent.pid });
      }
      console.log(`  all loaded ${models} models; waiting for each agent's first resync after the burst`);
      await waitFor(
        () => atReady.every((lane) => lane.heard.indexRequests() > lane.indexRequests),
        firstResyncTimeoutMs,
        "each agent's first resync after the burst",
      );
      console.log(`  settling ${settleMs / 1000} s, measuring ${measureMs / 1000} s`);
      await sleep(settleMs);
      const starts = await Promise.all(idlers.map(readingOf));
      const rss = await sampleRssOf(
        idlers.map((idler) => idler.pid),
        measureMs,
        1000,
      );
      const ends = await Promise.all(idlers.map(readingOf));
      const idle = idlers.map((idler, i) =>
        figuresOf(idler, rss[i]!, starts[i]!, ends[i]!, measureMs / 60_000),
      );
      await goIdler?.close();
      goIdler = undefined;
      for (const process of running.filter((process) => process !== agent)) await stopProcess(process);

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
        // The ratio is to the budget: the floor (no timers, no resync) and the Go agent (no resync) idle at ~0.
        ...[mineIdle, dropInIdle].map((figures): Check => ({
          name: `P5 idle CPU ≤ ${maxCpuMsPerMinute} ms/min, ${figures.name}`,
          withinBudget: figures.cpuMsPerMinute <= maxCpuMsPerMinute,
          ratio: round3(figures.cpuMsPerMinute / maxCpuMsPerMinute),
          better: 'lower',
          cpuMsPerMinute: figures.cpuMsPerMinute,
          floorCpuMsPerMinute: floorIdle.cpuMsPerMinute,
          ...(goIdle && { goAgentCpuMsPerMinute: goIdle.cpuMsPerMinute }),
        })),
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
            "the HTTP surface on), all with their defaults (info logs); the floor watcher; and, in the bench's " +
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
            "the lower of the two readings (no GC is forced). The CPU checks' ratio is to the 50 ms budget.",
          'P6: the agent is stopped (SIGTERM) and started again on the same dirs and stand-in; the clock runs ' +
            'from the spawn to the `start-up sync complete; ready` log line reaching the bench (readyLogDurationMs: ' +
            "the agent's own durationMs from start-up to ready). downloads = `model downloading` logs, loads = " +
            'load requests at the stand-in, both summed over the restarts and 0.5 s after each ready. ratio = ' +
            "median restart / median spawn-to-exit of `node -e 0` (the runtime's own start-up), paired per restart.",
        ],
      };
    } finally {
      await goIdler?.close();
      for (const process of running) await stopProcess(process);
      await standIn.close();
      await floorStandIn.close();
      await binStandIn.close();
      await dropInStandIn.close();
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};
