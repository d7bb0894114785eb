/**
 * Suite swap-to-load: the real agent process, from a config change adding a model to the server's load request: a
 * kubelet `..data` swap (the dir source), and a MODIFIED from the API-server stand-in (`--source kube-api`).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { atomicWrite } from '../src/testing/atomic-writer';
import { seededRandom } from '../src/testing/seeded-random';
import { startV2ModelServer, type V2Request } from '../src/testing/v2-model-server';
import { sleep, withTimeout } from '../src/testing/wait';
import { startCli, type CliProcess } from '../test/helpers/cli-process';
import { startKubeApiCluster, type KubeApiCluster } from '../test/helpers/kube-api';
import { round3, summarize, type Row, type Suite, type SuiteResult } from './suite';

const swaps = 200;
const warmupSwaps = 10;
const settleMs = 100;
const startTimeoutMs = 30_000;
const swapTimeoutMs = 10_000;
const modelFileBytes = 4096;

// Built by `npm run bench` from the same sources as this suite (dist/ may be stale or missing).
const cliPath = path.join(__dirname, '..', 'src', 'cli.js');

const modelName = (index: number): string => `model-${String(index).padStart(4, '0')}`;

/** models.json listing models 0..count-1, each stored in its own tiny dir under `sources`. */
const modelsJson = (count: number, sources: string): string =>
  JSON.stringify(
    Array.from({ length: count }, (_, i) => ({
      modelName: modelName(i),
      modelSpec: { storageUri: path.join(sources, modelName(i)), framework: 'sklearn', memory: '100Mi' },
    })),
  );

/**
 * When the stand-in received each model's first load request, in `performance.now()` ms: `observe` is the
 * stand-in's `onRequest` hook, so the instant is taken as the request arrives (sub-millisecond, where the
 * stand-in's own `at` is `Date.now()`), without polling, and wakes the waiter at once.
 */
const loadArrivals = () => {
  const arrivals = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  const observe = (request: V2Request): void => {
    const now = performance.now();
    const name = request.name;
    if (request.method !== 'POST' || !request.path.endsWith('/load') || name === undefined) return;
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
  return { observe, next };
};

/** Stops the agent with SIGTERM, or SIGKILL when it takes longer than 5 s. */
const stop = async (agent: CliProcess): Promise<void> => {
  await agent.signalAndWait('SIGTERM', 5000).catch(() => agent.signalAndWait('SIGKILL'));
};

/**
 * How a phase runs: the agent's log level (info adds the per-model log lines the split is computed from) and the
 * random pause between a load request and the next swap.
 */
interface Phase {
  readonly label: string;
  /** Where the agent reads the config: the dir (kubelet swaps), or the ConfigMap through the API server. */
  readonly source: 'dir' | 'kube-api';
  readonly logLevel: 'warn' | 'info';
  readonly gapMs: { readonly min: number; readonly max: number };
  readonly seed: number;
}

interface PhaseResult {
  readonly phase: Phase;
  /** Swap (atomicWrite returned) or MODIFIED (written to the watch) to the load request, ms. */
  readonly latencies: number[];
  /** From atomicWrite's rename of `..data` (the swap itself) to its return, ms. */
  readonly renameToReturnMs: number[];
  /** info phase only: swap to `model downloading`, `model downloading` to `model loading`, and to the request. */
  readonly reaction: number[];
  readonly download: number[];
  readonly toRequest: number[];
  warnings: number;
  wallSeconds: number;
}

const runPhase = async (phase: Phase): Promise<PhaseResult> => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-swap-'));
  const configDir = path.join(root, 'config');
  const modelDir = path.join(root, 'models');
  const sources = path.join(root, 'sources');
  const total = 1 + warmupSwaps + swaps;
  for (let i = 0; i < total; i++) {
    mkdirSync(path.join(sources, modelName(i)), { recursive: true });
    writeFileSync(path.join(sources, modelName(i), 'model.bin'), Buffer.alloc(modelFileBytes, i % 251));
  }
  const loads = loadArrivals();
  const standIn = await startV2ModelServer({ modelDir, onRequest: loads.observe });
  const cluster: KubeApiCluster | undefined =
    phase.source === 'kube-api' ? await startKubeApiCluster(root) : undefined;
  /** Writes the config; returns when the change was made (performance.now()) and, for a swap, its rename. */
  const change = (text: string): { at: number; renamed: number } => {
    if (cluster !== undefined) {
      const at = cluster.api.apply({ 'models.json': text }).sentAt;
      return { at, renamed: at };
    }
    let renamed = 0;
    atomicWrite(
      configDir,
      { 'models.json': text },
      {
        onStep: (step) => {
          if (step === 'rename') renamed = performance.now();
        },
      },
    );
    return { at: performance.now(), renamed };
  };
  change(modelsJson(1, sources));
  const agent = startCli(
    [
      ...(cluster !== undefined ? ['--source', 'kube-api', '--configmap', 'models'] : []),
      '--config-dir',
      configDir,
      '--model-dir',
      modelDir,
      '--server-url',
      standIn.url,
      '--log-level',
      phase.logLevel,
      '--local-storage-roots',
      sources,
    ],
    { cliPath, ...(cluster !== undefined ? { env: cluster.env } : {}) },
  );
  const random = seededRandom(phase.seed); // the same gaps every run
  const result: PhaseResult = {
    phase,
    latencies: [],
    renameToReturnMs: [],
    reaction: [],
    download: [],
    toRequest: [],
    warnings: 0,
    wallSeconds: 0,
  };
  const started = performance.now();
  try {
    await loads.next(modelName(0), startTimeoutMs);
    const swapTimes: number[] = [];
    for (let i = 1; i < total; i++) {
      const { at: t0, renamed } = change(modelsJson(i + 1, sources));
      const arrival = await loads.next(modelName(i), swapTimeoutMs);
      if (i > warmupSwaps) {
        result.latencies.push(arrival - t0);
        result.renameToReturnMs.push(t0 - renamed);
        swapTimes[i] = t0;
      }
      await sleep(phase.gapMs.min + random() * (phase.gapMs.max - phase.gapMs.min));
    }
    result.wallSeconds = (performance.now() - started) / 1000;
    result.warnings = agent.logs.filter((log) => log.level >= 40).length;
    if (phase.logLevel === 'info') {
      // Agent log times are its Date.now() (whole ms); put the bench's instants on the same wall clock.
      const wall = (at: number): number => performance.timeOrigin + at;
      const first = (msg: string, model: string): number | undefined =>
        agent.logs.find((log) => log.msg === msg && log['model'] === model)?.['time'] as number | undefined;
      for (let i = warmupSwaps + 1; i < total; i++) {
        const downloading = first('model downloading', modelName(i));
        const loading = first('model loading', modelName(i));
        if (downloading === undefined || loading === undefined) continue;
        const t0 = wall(swapTimes[i]!);
        result.reaction.push(downloading - t0);
        result.download.push(loading - downloading);
        result.toRequest.push(t0 + result.latencies[i - warmupSwaps - 1]! - loading);
      }
    }
    return result;
  } catch (error) {
    throw new Error(`${String(error)}\nagent output (last lines):\n${agent.transcript(10)}`, {
      cause: error,
    });
  } finally {
    await stop(agent);
    await standIn.close();
    await cluster?.api.close();
    rmSync(root, { recursive: true, force: true });
  }
};

const phases: ReadonlyArray<Phase> = [
  {
    label: 'warn, gap 20-50 ms',
    source: 'dir',
    logLevel: 'warn',
    gapMs: { min: 20, max: 50 },
    seed: 20240601,
  },
  {
    label: 'info, gap 20-50 ms',
    source: 'dir',
    logLevel: 'info',
    gapMs: { min: 20, max: 50 },
    seed: 20240602,
  },
  {
    label: 'info, gap 150-200 ms',
    source: 'dir',
    logLevel: 'info',
    gapMs: { min: 150, max: 200 },
    seed: 20240603,
  },
  // The same changes and gaps through the API server: the kubelet never swaps faster than its sync period.
  {
    label: 'kube-api, warn, gap 20-50 ms',
    source: 'kube-api',
    logLevel: 'warn',
    gapMs: { min: 20, max: 50 },
    seed: 20240601,
  },
  {
    label: 'kube-api, info, gap 150-200 ms',
    source: 'kube-api',
    logLevel: 'info',
    gapMs: { min: 150, max: 200 },
    seed: 20240603,
  },
];

/** The swap-to-load suite. */
export const swapToLoadSuite: Suite = {
  name: 'swap-to-load',
  description:
    `Latency from a kubelet ConfigMap swap that adds one model (atomicWrite of models.json), and from an API-server ` +
    `MODIFIED event that does (--source kube-api), to the model server's load request for it, over ${swaps} ` +
    'changes each, with the real agent process (node src/cli.js), the V2 stand-in server and local storage.',
  run: async (): Promise<SuiteResult> => {
    if (!existsSync(cliPath)) {
      return { skipped: `${cliPath} is missing: run through \`npm run bench\``, rows: [] };
    }
    const results: PhaseResult[] = [];
    for (const phase of phases) {
      console.log(`  ${phase.label}: ${warmupSwaps} warm-up + ${swaps} swaps`);
      results.push(await runPhase(phase));
    }
    const rows: Row[] = results.flatMap((result) => {
      const stats = (what: string, samples: number[], extra: Row = {}): Row => {
        const summary = summarize(samples);
        return {
          run: result.phase.label,
          interval: what,
          runs: summary.runs,
          medianMs: summary.median,
          p90Ms: summary.p90,
          p99Ms: summary.p99 ?? null,
          minMs: summary.min,
          maxMs: summary.max,
          ...extra,
        };
      };
      return [
        stats(
          result.phase.source === 'dir' ? 'swap → load request' : 'MODIFIED sent → load request',
          result.latencies,
          {
            over50Ms: result.latencies.filter((ms) => ms > 50).length,
          },
        ),
        ...(result.reaction.length > 0
          ? [
              stats(
                result.phase.source === 'dir' ? 'swap → model downloading' : 'MODIFIED → model downloading',
                result.reaction,
              ),
              stats('downloading → loading (copy + fsyncs)', result.download),
              stats('loading → load request (journal + HTTP)', result.toRequest),
            ]
          : []),
      ];
    });
    const renameToReturn = summarize(
      results.filter((result) => result.phase.source === 'dir').flatMap((result) => result.renameToReturnMs),
    );
    return {
      rows,
      notes: [
        'Each swap: atomicWrite (the kubelet AtomicWriter emulator, synchronous) of models.json with one model ' +
          'more than before; the clock starts when it returns and stops when the stand-in (in the bench ' +
          "process) receives POST .../load for the new model, taken from the stand-in's onRequest hook " +
          `(sub-ms, no polling). The next swap follows that request after the run's random gap; ${warmupSwaps} ` +
          'warm-up swaps are not counted.',
        'Agent flags: --config-dir --model-dir --server-url --log-level --local-storage-roots, defaults otherwise (inotify, settle ' +
          `${settleMs} ms, download 4, load 2). Each model is one ${modelFileBytes / 1024} KiB file in its own ` +
          'local dir; the copy is flushed (fsync of file, dirs and marker) before the rename into place, and the ' +
          'load journal entry is fsynced before the request.',
        'The split rows come from the info runs: the agent logs `model downloading` and `model loading` with its ' +
          'Date.now() (whole ms), so they are accurate to about 1 ms; per swap the three parts add up to its swap → load request. ' +
          'swap → model downloading can be negative: the agent may see the new `..data` before atomicWrite ' +
          `returns (rename to return: median ${round3(renameToReturn.median)} ms, max ${round3(renameToReturn.max)} ms).`,
        'kube-api runs: the agent runs with --source kube-api --configmap models against the API-server stand-in ' +
          '(src/testing/kube-api-stand-in.ts, in the bench process, TLS on 127.0.0.1, kubeconfig with a token file); ' +
          'the clock starts when the stand-in has written the MODIFIED event to the open watch (its sentAt) and ' +
          'stops at the load request, as for the swaps. Same models, gaps and seeds as the dir runs.',
        'over50Ms = swaps slower than 50 ms. With a 20-50 ms gap the next swap lands inside the previous ' +
          `burst's settle window (${settleMs} ms of quiet; coalesceBursts reads at once at a burst's start, then ` +
          'once more when the dir has been quiet that long), so it is only picked up by that trailing read: the ' +
          'latencies alternate between fast (~10-40 ms) and slow (~60-150 ms) swaps, and the median lands ' +
          'between the two. The 150-200 ms gap run keeps swaps apart and shows the reaction alone; kubelet ' +
          'itself swaps a ConfigMap volume at most about once per sync period (about a minute).',
        ...results.map(
          (result) =>
            `${result.phase.label}: ${result.wallSeconds.toFixed(1)} s for the swaps, ` +
            `${result.warnings} agent warnings/errors.`,
        ),
      ],
    };
  },
};
