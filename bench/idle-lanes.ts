/**
 * The idle suite's lanes beyond the agent fixture: CPU time from /proc (any process, Go's too), the KServe
 * drop-in's command line, the KServe Go agent's puller idling after the same models, and what is read of each lane
 * at the ends of the window.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../src/testing/v2-model-server';
import { loadArrivals, modelsJson, readProbe, type ProbeReading } from './agent-fixture';
import type { IdleFigures, IdlerName } from './idle-report';
import { round3, summarize } from './suite';
import type { CliProcess } from '../test/helpers/cli-process';
import type { V2Request } from '../src/testing/v2-model-server';
import {
  freePort,
  kserveAgentMissing,
  kserveAgentServerPort,
  startKserveAgent,
  type KserveAgentProcess,
} from './kserve-agent';

/** Linux's USER_HZ: the unit of utime and stime in /proc/<pid>/stat (100 on every architecture Node runs on). */
const clockTicksPerSecond = 100;

/** utime + stime of `pid` from /proc/<pid>/stat, in ms (10 ms ticks; threads that ended included). */
const statCpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command, which may hold spaces: state is field 3, utime 14 and stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond;
};

/**
 * The CPU time of `pid` in ms: the sum of its threads' time on a CPU from /proc/<pid>/task/<tid>/schedstat (ns),
 * else utime + stime from /proc/<pid>/stat (10 ms ticks: 20 ms/min steps over a 30 s window, too coarse for a
 * 50 ms budget). Read from outside: the reading neither wakes the process nor needs a preload (Go has none).
 */
export const procCpuMs = (pid: number): number => {
  try {
    const ns = readdirSync(`/proc/${pid}/task`).reduce(
      (sum, tid) => sum + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]),
      0,
    );
    if (Number.isFinite(ns)) return ns / 1e6;
  } catch {
    // no schedstat on this kernel, or a thread ended while read: the coarser figure
  }
  return statCpuMs(pid);
};

/**
 * How KServe's webhook starts its agent with the puller (`--enable-puller`, `--config-dir`, `--model-dir`,
 * `--component-port`, `--port`), which modelsync takes as the drop-in: the agent port (the reverse proxy and the
 * probes) and the HTTP surface on `port`, the model server at 127.0.0.1:`componentPort`.
 */
export const kserveDropInArgs = (
  configDir: string,
  modelDir: string,
  componentPort: number,
  port: number,
): string[] => [
  ...['--enable-puller', '--config-dir', configDir, '--model-dir', modelDir],
  ...['--component-port', String(componentPort), '--port', String(port)],
];

/** A free port for the drop-in's `--port` (0 is refused there, as KServe's agent always serves its port). */
export const dropInPort = freePort;

/** The Go agent's puller idling after `models` models, its stand-in and how to stop both. */
export interface GoIdler {
  readonly agent: KserveAgentProcess;
  readonly close: () => Promise<void>;
}

/**
 * The KServe Go agent with its puller on `dir`/config and `dir`/models after it loaded `models` models from
 * `store`, or why it is not run: only in the bench's own network namespace (its puller loads at localhost:8080,
 * where the stand-in listens) and once the binary is built. It reads models.json at start and then reacts only
 * to a new `..data`: it starts on an empty list, which is then swapped for the full one.
 */
export const startGoIdler = async (
  dir: string,
  models: number,
  store: string,
  timeoutMs: number,
): Promise<GoIdler | string> => {
  const missing = kserveAgentMissing();
  if (missing !== undefined) return missing;
  const configDir = path.join(dir, 'config');
  mkdirSync(path.join(dir, 'models'), { recursive: true });
  atomicWrite(configDir, { 'models.json': '[]' });
  const loads = loadArrivals();
  const standIn: V2ModelServerStandIn = await startV2ModelServer({
    host: '127.0.0.1',
    port: kserveAgentServerPort,
    onRequest: loads.observe,
  });
  let agent: KserveAgentProcess | undefined;
  const close = async (): Promise<void> => {
    agent?.stop();
    await agent?.exited;
    await standIn.close();
  };
  try {
    agent = await startKserveAgent([
      ...['--enable-puller', '--config-dir', configDir, '--model-dir', path.join(dir, 'models')],
      ...['--component-port', String(kserveAgentServerPort)],
    ]);
    atomicWrite(configDir, { 'models.json': modelsJson(models, store) });
    await loads.distinct(models, timeoutMs);
    return { agent, close };
  } catch (error) {
    await close();
    throw error;
  }
};

const MiB = 2 ** 20;

/** One watcher idling: its pid, and its process and probe file when it is a Node.js one. */
export interface Idler {
  readonly name: IdlerName;
  readonly pid: number;
  readonly probed?: { readonly process: CliProcess; readonly probeFile: string };
}

/** What was read of one idler at the start and the end of the window. */
export interface Reading {
  readonly cpuMs: number;
  readonly probe?: ProbeReading;
}

export const readingOf = async (idler: Idler): Promise<Reading> => ({
  cpuMs: procCpuMs(idler.pid),
  ...(idler.probed && { probe: await readProbe(idler.probed.process, idler.probed.probeFile) }),
});

export const figuresOf = (
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
export const heard = () => {
  const loads = loadArrivals();
  let indexRequests = 0;
  const onRequest = (request: V2Request): void => {
    loads.observe(request);
    if (request.path === '/v2/repository/index') indexRequests++;
  };
  return { loads, onRequest, indexRequests: () => indexRequests };
};

/** What touching memory again costs here, a page at a time: right after it was touched, and after a while idle. */
export interface PageTouchCost {
  readonly hotUsPerPage: number;
  readonly idleUsPerPage: number;
}

const pageBytes = 4096;

/**
 * A probe of what this machine charges for memory a process touches again after idling: 16 MiB touched page by
 * page now (twice: the second is the hot figure), and again at `idleCost()`. Some machines (this VM since December
 * 2026) take idle memory away and charge the next touch, ~7 us a page after 30 s, as the process's own CPU: a
 * resync that reads 1,000 records after a minute idle then costs several times what it costs on a machine that
 * does not, for the agent and the floor alike.
 */
export const pageTouchProbe = (): { readonly idleCost: () => PageTouchCost } => {
  const pages = 4096;
  const memory = Buffer.alloc(pages * pageBytes, 1);
  const touchUsPerPage = (): number => {
    const started = performance.now();
    for (let offset = 0; offset < memory.length; offset += pageBytes)
      memory[offset] = (memory[offset] ?? 0) ^ 1;
    return round3(((performance.now() - started) * 1000) / pages);
  };
  touchUsPerPage();
  const hotUsPerPage = touchUsPerPage();
  return { idleCost: () => ({ hotUsPerPage, idleUsPerPage: touchUsPerPage() }) };
};
