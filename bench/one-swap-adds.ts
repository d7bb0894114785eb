/**
 * N models added in one kubelet swap → all loaded, modelsync beside the KServe Go agent's puller and the floor watcher
 * (the least a Node.js sidecar can do): the wall time from the swap to the Nth load request and the puller's
 * CPU-seconds over it, in interleaved rounds (adds-throughput).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { waitFor } from '../src/testing/wait';
import { loadArrivals, modelName, modelsJson, startModelStore } from './agent-fixture';
import { cpuSecondsOf, standInPort, startPuller, type PullerName, type RunningPuller } from './puller-peers';
import { kserveAgentMissing } from './kserve-agent';

/** One round of one puller. */
export interface SwapAddsRound {
  readonly puller: PullerName;
  /** From the swap (atomicWrite returned) to the last model's load request, s. */
  readonly seconds: number;
  /** The puller's user + system CPU over that time, s. */
  readonly cpuSeconds: number;
  /** Loads the stand-in answered 200 whose model dir held a marker (a model complete on disk; the floor writes none). */
  readonly completeLoads: number;
}

/** Each model: one file of this size on the http store (small: this is about per-model cost). */
export const swapAddsFileBytes = 4096;
const loadTimeoutMs = 300_000;

const oneRound = async (puller: PullerName, count: number, storeUrl: string): Promise<SwapAddsRound> => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-swap-adds-'));
  const configDir = path.join(root, 'config');
  const modelDir = path.join(root, 'models');
  mkdirSync(modelDir);
  atomicWrite(configDir, { 'models.json': '[]' });
  const loads = loadArrivals();
  // The same stand-in for all, checking each loaded dir holds a marker (both agents write `SUCCESS.<hash>`).
  const standIn = await startV2ModelServer({ port: standInPort(), modelDir, onRequest: loads.observe });
  let running: RunningPuller | undefined;
  try {
    running = await startPuller(puller, configDir, modelDir, standIn.url);
    const cpuBefore = cpuSecondsOf(running.pid);
    atomicWrite(configDir, { 'models.json': modelsJson(count, storeUrl) });
    const swapped = performance.now();
    await loads.distinct(count, loadTimeoutMs);
    const cpuSeconds = cpuSecondsOf(running.pid) - cpuBefore;
    let last = 0;
    for (let i = 0; i < count; i++) last = Math.max(last, await loads.next(modelName(i), 0));
    // The last requests may still be answered when the last one arrives: count once every one has been.
    await waitFor(() => standIn.loads.length >= count, 30_000, 'every load answered');
    const completeLoads = standIn.loads.filter((load) => load.complete && load.status === 200).length;
    return { puller, seconds: (last - swapped) / 1000, cpuSeconds, completeLoads };
  } catch (error) {
    throw new Error(`${puller}: ${String(error)}\n${running?.transcript() ?? ''}`, { cause: error });
  } finally {
    await running?.stop();
    await standIn.close();
    rmSync(root, { recursive: true, force: true });
  }
};

/**
 * `rounds` rounds of `count` models added in one swap, each round every puller once (the order turning), each on
 * fresh dirs; the Go puller only where it can run (`kserveAgentMissing`), the floor watcher everywhere.
 */
export const measureSwapAdds = async (
  count: number,
  rounds: number,
): Promise<{ readonly rounds: SwapAddsRound[]; readonly goMissing?: string }> => {
  const goMissing = kserveAgentMissing();
  const pullers: PullerName[] = [
    'modelsync',
    'floor',
    'floor-crash-safe',
    ...(goMissing === undefined ? ['kserve-agent' as const] : []),
  ];
  const store = await startModelStore(swapAddsFileBytes);
  const measured: SwapAddsRound[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? pullers : [...pullers].reverse();
      for (const puller of order) {
        const result = await oneRound(puller, count, store.url);
        console.log(
          `  ${count} models in one swap, ${puller}: ${result.seconds.toFixed(2)} s, ` +
            `${result.cpuSeconds.toFixed(2)} CPU-s, ${result.completeLoads} complete loads`,
        );
        measured.push(result);
      }
    }
  } finally {
    await store.close();
  }
  return { rounds: measured, ...(goMissing !== undefined ? { goMissing } : {}) };
};

// A dev entry point: `node .bench-build/bench/one-swap-adds.js [count] [rounds]` (inside `unshare -n` for Go).
if (require.main === module) {
  const [count = '1000', rounds = '2'] = process.argv.slice(2);
  measureSwapAdds(Number(count), Number(rounds)).then(
    (result) => console.log(result.goMissing ?? 'done'),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
