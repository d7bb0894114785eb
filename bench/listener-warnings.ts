/** P3's "no listener warnings at caps 64/64": the real agent process syncing N local models at high caps, then stopped. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { loadArrivals, modelName, startAgentProcess, stopProcess } from './agent-fixture';

/** What one run saw: the warnings in the agent's stderr and how many models it loaded. */
export interface ListenerWarnings {
  readonly warnings: number;
  readonly loaded: number;
  readonly seconds: number;
  /** The first warning's line, to say where it came from. */
  readonly firstWarning?: string;
}

const pattern = /MaxListenersExceededWarning/;

/**
 * Starts `node src/cli.js` with `--download-concurrency caps --load-concurrency caps` on `count` models from a
 * local storage root, waits until every one has had its load request, stops it with SIGTERM (the shutdown
 * signal is where the warning was seen) and counts `MaxListenersExceededWarning` in everything it wrote to stderr.
 */
export const countListenerWarnings = async (count: number, caps: number): Promise<ListenerWarnings> => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-listeners-'));
  const [configDir, modelDir, sourceDir] = ['config', 'models', 'source'].map((dir) =>
    path.join(root, dir),
  ) as [string, string, string];
  mkdirSync(modelDir);
  mkdirSync(sourceDir);
  writeFileSync(path.join(sourceDir, 'model.bin'), Buffer.alloc(4096, 7));
  const loads = loadArrivals();
  const standIn = await startV2ModelServer({ modelDir, onRequest: loads.observe });
  const models = Array.from({ length: count }, (_, i) => ({
    modelName: modelName(i),
    modelSpec: { storageUri: sourceDir, framework: 'sklearn' },
  }));
  atomicWrite(configDir, { 'models.json': JSON.stringify(models) });
  const started = Date.now();
  const agent = startAgentProcess([
    ...['--config-dir', configDir, '--model-dir', modelDir, '--server-url', standIn.url],
    ...['--local-storage-roots', sourceDir, '--log-level', 'warn'],
    ...['--download-concurrency', String(caps), '--load-concurrency', String(caps)],
  ]);
  try {
    await loads.distinct(count, 300_000);
    const seconds = (Date.now() - started) / 1000;
    await stopProcess(agent);
    const firstWarning = agent.stderr.lines.find((line) => pattern.test(line));
    return {
      warnings: agent.stderr.lines.filter((line) => pattern.test(line)).length,
      loaded: standIn.loaded.size,
      seconds,
      ...(firstWarning === undefined ? {} : { firstWarning: firstWarning.slice(0, 300) }),
    };
  } catch (error) {
    throw new Error(`${String(error)}\n${agent.transcript(10)}`, { cause: error });
  } finally {
    await stopProcess(agent);
    await standIn.close();
    rmSync(root, { recursive: true, force: true });
  }
};
