/** Suite many-models: the real agent tracking 100k models (on disk and loaded) — steady RSS and one change → load (P7). */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as E from 'fp-ts/Either';
import { markerJson, markerPrefix, specIdentityJson } from '../src/core/marker';
import { ModelSpec } from '../src/core/model-config';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { sleep } from '../src/testing/wait';
import {
  cliPath,
  loadArrivals,
  modelName,
  modelsJson,
  readProbe,
  sampleRssOf,
  startAgentProcess,
  startModelStore,
  stopProcess,
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
const modelFileBytes = 16;
const sizes = {
  full: { models: 100_000, settleMs: 10_000, sampleMs: 15_000, changes: 10 },
  quick: { models: 20_000, settleMs: 3_000, sampleMs: 5_000, changes: 5 },
};
const startTimeoutMs = 600_000;
/** tmpfs, where there is one: this suite is about tracking, and unlinking 100k dirs on a busy disk takes minutes. */
const shm = '/dev/shm';
const changeTimeoutMs = 10_000;
/** P7 targets. */
const maxRssMiB = 400;
const maxChangeMs = 50;

/**
 * Writes `count` installed models into `modelDir` as the agent leaves them: `<name>/model.bin` and the
 * `SUCCESS.<hash>` marker with the spec of modelsJson's entry and the file manifest. Faster than having the agent
 * download them, and it is the state a restart finds.
 */
const populate = (modelDir: string, count: number, store: string): void => {
  const body = Buffer.alloc(modelFileBytes, 7);
  const files = new Map([['model.bin', modelFileBytes]]);
  for (let i = 0; i < count; i++) {
    const name = modelName(i);
    const decoded = ModelSpec.decode({
      storageUri: `${store}/${name}/model.bin`,
      framework: 'sklearn',
      memory: '100Mi',
    });
    if (E.isLeft(decoded)) throw new Error(`bench spec of ${name} does not decode`);
    const spec = decoded.right;
    const dir = path.join(modelDir, name);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'model.bin'), body);
    const marker = markerPrefix + createHash('sha256').update(specIdentityJson(spec)).digest('hex');
    writeFileSync(path.join(dir, marker), markerJson(spec, files));
  }
};

/** The many-models suite. */
export const manyModelsSuite: Suite = {
  name: 'many-models',
  description:
    `The real agent (node src/cli.js) started on ${sizes.full.models} models (quick: ${sizes.quick.models}) ` +
    'already on disk and loaded: steady-state RSS, then single-model changes (one model added) → load request.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    if (!existsSync(cliPath))
      return { skipped: `${cliPath} is missing: run through \`npm run bench\``, rows: [] };
    const { models, settleMs, sampleMs, changes } = quick ? sizes.quick : sizes.full;
    const root = mkdtempSync(path.join(existsSync(shm) ? shm : os.tmpdir(), 'modelsync-bench-many-'));
    const configDir = path.join(root, 'config');
    const modelDir = path.join(root, 'models');
    mkdirSync(modelDir);
    const store = await startModelStore(modelFileBytes);
    const loads = loadArrivals();
    const standIn = await startV2ModelServer({ onRequest: loads.observe });
    const probeFile = path.join(root, 'agent.probe');
    let agent: ReturnType<typeof startAgentProcess> | undefined;
    try {
      let started = performance.now();
      populate(modelDir, models, store.url);
      const names = Array.from({ length: models }, (_, i) => modelName(i));
      for (let i = 0; i < names.length; i += 10_000) standIn.preload(...names.slice(i, i + 10_000));
      atomicWrite(configDir, { 'models.json': modelsJson(models, store.url) });
      console.log(`  ${models} models written in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      started = performance.now();
      agent = startAgentProcess(
        ['--config-dir', configDir, '--model-dir', modelDir, '--server-url', standIn.url],
        { probeFile },
      );
      const ready = await agent.waitForLog('start-up sync complete; ready', startTimeoutMs);
      const readySeconds = (performance.now() - started) / 1000;
      const startupLoads = loads.requests();
      console.log(`  ready in ${readySeconds.toFixed(1)} s; settling ${settleMs / 1000} s`);
      await sleep(settleMs);
      const [steady] = await sampleRssOf([agent.child.pid!], sampleMs, 500);
      const probe = await readProbe(agent, probeFile);
      const latencies: number[] = [];
      for (let k = 0; k < changes; k++) {
        const added = models + k;
        atomicWrite(configDir, { 'models.json': modelsJson(added + 1, store.url) });
        const t0 = performance.now();
        latencies.push((await loads.next(modelName(added), changeTimeoutMs)) - t0);
        await sleep(300);
      }
      const [after] = await sampleRssOf([agent.child.pid!], 1000, 250);
      const rss = summarize(steady!.map((bytes) => bytes / MiB));
      const change = summarize(latencies);
      const rows: Row[] = [
        {
          models,
          readySeconds: round3(readySeconds),
          readyLogDurationMs: Number(ready['durationMs']),
          startupLoads,
          steadyRssMedianMiB: rss.median,
          steadyRssMaxMiB: rss.max,
          heapUsedMiB: round3(probe.heapUsed / MiB),
          rssAfterChangesMiB: round3(Math.max(...after!) / MiB),
        },
        {
          models,
          change: 'one model added → load request',
          runs: change.runs,
          medianMs: change.median,
          maxMs: change.max,
          minMs: change.min,
        },
      ];
      const checks: Check[] = [
        {
          name: `P7 ${models} models tracked: steady RSS ≤ ${maxRssMiB} MiB`,
          withinBudget: rss.max <= maxRssMiB && startupLoads === 0,
          steadyRssMaxMiB: rss.max,
          startupLoads,
        },
        {
          name: `P7 ${models} models tracked: one model change → load request ≤ ${maxChangeMs} ms (median)`,
          withinBudget: change.median <= maxChangeMs,
          medianMs: change.median,
          maxMs: change.max,
        },
      ];
      return {
        rows,
        checks,
        notes: [
          `The dirs live on tmpfs (${shm}) when it exists: P7 is about tracking, not the disk. ` +
            `The bench writes ${models} model dirs as the agent leaves them (a ${modelFileBytes}-byte model.bin and ` +
            'the SUCCESS marker with its file manifest), the V2 stand-in reports them loaded, and models.json ' +
            'lists them; the agent (defaults, info logs) recovers them at start-up: startupLoads must be 0.',
          `Steady RSS: VmRSS every 0.5 s over ${sampleMs / 1000} s after ${settleMs / 1000} s of settling; ` +
            'heapUsed from the preloaded probe (bench/memory-probe.ts) after that window.',
          `Each change: atomicWrite of models.json listing one model more (${models}+ entries, the whole file ` +
            'decoded and diffed), clock from its return to the load request at the stand-in; 300 ms between ' +
            'changes. No floor here: the targets are absolute (issue #10, P7), so CI does not compare this suite.',
        ],
      };
    } catch (error) {
      throw new Error(`${String(error)}\n${agent?.transcript(10) ?? ''}`, { cause: error });
    } finally {
      if (agent !== undefined) await stopProcess(agent);
      await standIn.close();
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};
