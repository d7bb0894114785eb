/** Suite idle-restart: the real agent idle after loading 1k models beside the floor watcher (P5), then restarted (P6). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { sleep, waitFor } from '../src/testing/wait';
import type { CliProcess } from '../test/helpers/cli-process';
import {
  cliPath,
  modelsJson,
  sampleRssOf,
  startAgentProcess,
  startFloorProcess,
  startModelStore,
  stopProcess,
} from './agent-fixture';
import {
  dropInPort,
  figuresOf,
  heard,
  kserveDropInArgs,
  pageTouchProbe,
  readingOf,
  startGoIdler,
  type GoIdler,
  type Idler,
} from './idle-lanes';
import { idleRestartReport } from './idle-report';
import type { RunOptions, Suite, SuiteResult } from './suite';

const models = 1_000;
const modelFileBytes = 4096;
const startTimeoutMs = 120_000;
/**
 * Full: the default resync (60 s), so the minute measured holds one resync. Quick: a resync every 30 s and half a
 * minute measured, scaled to a minute: twice the default's resyncs, an upper bound. Either way the window opens
 * `settleMs` after each agent's first resync after the burst (which repairs what the burst changed, once).
 */
const timing = {
  full: { settleMs: 5_000, measureMs: 60_000, restarts: 3, resyncMs: 60_000, resyncArgs: [] as string[] },
  quick: {
    settleMs: 2_000,
    measureMs: 30_000,
    restarts: 2,
    resyncMs: 30_000,
    resyncArgs: ['--resync-interval', '30s'],
  },
};
const firstResyncTimeoutMs = 120_000;
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
    const { settleMs, measureMs, restarts, resyncMs, resyncArgs } = quick ? timing.quick : timing.full;
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
      const floor = startFloorProcess(floorLane.configDir, floorLane.modelDir, floorStandIn.url, {
        probeFile: floorProbe,
        resyncMs,
      });
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
      const pageTouch = pageTouchProbe();
      const starts = await Promise.all(idlers.map(readingOf));
      const rss = await sampleRssOf(
        idlers.map((idler) => idler.pid),
        measureMs,
        1000,
      );
      const pageTouchCost = pageTouch.idleCost();
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
      return idleRestartReport(
        idle,
        { restartsMs, readyLogMs, nodeMs, downloads, loads },
        { models, modelFileBytes, settleMs, measureMs, quick, goSkipped, pageTouch: pageTouchCost },
      );
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
