/** What the suites that drive the real agent process share: models.json, a model store, load arrivals, /proc readings. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startHttpServer, type RunningHttpServer } from '../src/testing/http-server';
import type { V2Request } from '../src/testing/v2-model-server';
import { sleep, waitFor, withTimeout } from '../src/testing/wait';
import { agentNodeFlags } from '../src/command/node-flags';
import { startCli, type CliProcess } from '../test/helpers/cli-process';

// Built by `npm run bench` from the same sources as the suites (dist/ may be stale or missing).
/** The agent's entry point in the bench build. */
export const cliPath = path.join(__dirname, '..', 'src', 'cli.js');
/** The floor watcher (bench/floor-watcher.ts) in the bench build. */
export const floorPath = path.join(__dirname, 'floor-watcher.js');
/** The preload that answers SIGUSR2 with the process's memory and CPU figures (bench/memory-probe.ts). */
export const probePath = path.join(__dirname, 'memory-probe.js');

/** `model-000042`: zero-padded, so names sort like their indexes up to a million models. */
export const modelName = (index: number): string => `model-${String(index).padStart(6, '0')}`;

/** models.json listing models `from`..`to`-1, each one file on the http store at `store`. */
export const modelsJson = (to: number, store: string, from = 0): string =>
  JSON.stringify(
    Array.from({ length: to - from }, (_, i) => ({
      modelName: modelName(from + i),
      modelSpec: {
        storageUri: `${store}/${modelName(from + i)}/model.bin`,
        framework: 'sklearn',
        memory: '100Mi',
      },
    })),
  );

/** An http store serving `bytes` bytes at `/<model name>/model.bin` for every model name. */
export const startModelStore = (bytes: number): Promise<RunningHttpServer> => {
  const body = Buffer.alloc(bytes, 7);
  return startHttpServer((req, res) => {
    if (!/^\/model-\d+\/model\.bin$/.test(req.url ?? '')) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-length': body.length }).end(body);
  });
};

/**
 * When the stand-in received each model's first load request, in `performance.now()` ms: `observe` is the
 * stand-in's `onRequest` hook, so the instant is taken as the request arrives (sub-millisecond, where the
 * stand-in's own `at` is `Date.now()`), without polling, and wakes the waiter at once.
 */
export const loadArrivals = () => {
  const arrivals = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  let requests = 0;
  const observe = (request: V2Request): void => {
    const now = performance.now();
    const name = request.name;
    if (request.method !== 'POST' || !request.path.endsWith('/load') || name === undefined) return;
    requests++;
    if (arrivals.has(name)) return;
    arrivals.set(name, now);
    waiters.get(name)?.(now);
  };
  /** Resolves with the arrival time of `name`'s load, or rejects after `timeoutMs`. */
  const next = (name: string, timeoutMs: number): Promise<number> => {
    const known = arrivals.get(name);
    if (known !== undefined) return Promise.resolve(known);
    const arrival = new Promise<number>((resolve) => waiters.set(name, resolve));
    return withTimeout(arrival, timeoutMs, `the load request for ${name}`).finally(() =>
      waiters.delete(name),
    );
  };
  /** Resolves once `count` distinct models have had a load request. */
  const distinct = (count: number, timeoutMs: number): Promise<void> =>
    waitFor(() => arrivals.size >= count, timeoutMs, `${count} load requests`);
  return { observe, next, distinct, requests: () => requests };
};

/** Stops a process with SIGTERM, or SIGKILL when it takes longer than 5 s. */
export const stopProcess = async (agent: CliProcess): Promise<void> => {
  await agent.signalAndWait('SIGTERM', 5000).catch(() => agent.signalAndWait('SIGKILL'));
};

/** How the agent is started beyond its flags: the memory probe's file (preloaded when given), extra environment. */
export interface AgentProcessOptions {
  readonly probeFile?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Started as the npm bin starts it: the file itself, whose `#!` line carries the Node.js flags. */
  readonly asBin?: boolean;
  /** `args` name the HTTP port themselves (KServe's `--port`): no `--http-port 0` is added. */
  readonly portInArgs?: boolean;
}

/**
 * Starts the agent as its image does (`node <flags> src/cli.js`), or as the npm bin does (`src/cli.js`, `asBin`),
 * with `args` and `--http-port 0`: no HTTP surface, whose default port (9081) would collide between the agents of
 * one suite and with other runs on the machine.
 */
export const startAgentProcess = (
  args: ReadonlyArray<string>,
  { probeFile, env = {}, asBin = false, portInArgs = false }: AgentProcessOptions = {},
): CliProcess =>
  startCli(portInArgs ? args : [...args, '--http-port', '0'], {
    cliPath,
    asBin,
    nodeFlags: asBin ? [] : agentNodeFlags,
    env: { ...env, ...probeEnv(probeFile) },
  });

/**
 * Starts the floor watcher on `configDir`, `modelDir` and `serverUrl`, the probe preloaded when `probeFile` is given,
 * with a resync every `resyncMs` when given.
 */
export const startFloorProcess = (
  configDir: string,
  modelDir: string,
  serverUrl: string,
  {
    probeFile,
    resyncMs,
    crashSafe = false,
  }: { probeFile?: string; resyncMs?: number; crashSafe?: boolean } = {},
): CliProcess =>
  startCli(
    [
      ...(crashSafe ? ['--crash-safe'] : []),
      ...[configDir, modelDir, serverUrl, ...(resyncMs === undefined ? [] : [String(resyncMs)])],
    ],
    {
      cliPath: floorPath,
      env: probeEnv(probeFile),
    },
  );

/** NODE_OPTIONS with the probe preloaded when `probeFile` is given (the bin's own flags come from its `#!` line). */
const probeEnv = (probeFile: string | undefined): Record<string, string> =>
  probeFile === undefined ? {} : { NODE_OPTIONS: `--require ${probePath}`, BENCH_PROBE_FILE: probeFile };

/** What the memory probe writes: `process.memoryUsage()` and `process.cpuUsage()` of the probed process. */
export interface ProbeReading {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly cpuUserMicros: number;
  readonly cpuSystemMicros: number;
  readonly seq: number;
}

/** Sends SIGUSR2 to `process` and resolves with the reading its probe writes to `probeFile`. */
export const readProbe = async (process: CliProcess, probeFile: string): Promise<ProbeReading> => {
  const read = (): ProbeReading | undefined => {
    try {
      return JSON.parse(readFileSync(probeFile, 'utf8')) as ProbeReading;
    } catch {
      return undefined;
    }
  };
  const before = read()?.seq ?? 0;
  process.child.kill('SIGUSR2');
  let reading: ProbeReading | undefined;
  await waitFor(
    () => {
      reading = read();
      return reading !== undefined && reading.seq > before;
    },
    5000,
    'the memory probe',
  );
  return reading!;
};

/** VmRSS of `pid` from /proc, in bytes (the reading does not wake the process). */
export const procRssBytes = (pid: number): number => {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? NaN) * 1024;
};

/** Samples `pids`' VmRSS every `everyMs` for `forMs`: the samples per pid, in bytes. */
export const sampleRssOf = async (
  pids: ReadonlyArray<number>,
  forMs: number,
  everyMs: number,
): Promise<number[][]> => {
  const samples = pids.map((): number[] => []);
  const end = performance.now() + forMs;
  while (performance.now() < end) {
    pids.forEach((pid, i) => samples[i]!.push(procRssBytes(pid)));
    await sleep(everyMs);
  }
  return samples;
};
