/**
 * The floor of the adds-throughput suite, run as a child process: the plain script a sidecar could be. For each
 * model: copy its file into `<model dir>/<name>/` and POST the V2 load, at most `downloads` copies and `loads`
 * POSTs at once (a tiny limiter); no validation, durability, journal or retries.
 * `node copy-post-floor.js <count> <server url> <model dir> <source file> <downloads> <loads>`; reports over IPC.
 */
import { copyFile, mkdir } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

/** What the floor reports: its time and the most copies and POSTs it had in flight. */
export interface FloorReport {
  readonly count: number;
  readonly seconds: number;
  readonly downloadHighWater: number;
  readonly loadHighWater: number;
  readonly failed: number;
}

/** A limiter: `run` waits for one of `cap` slots; `highWater` is the most slots held at once. */
const limiter = (cap: number) => {
  let active = 0;
  let highWater = 0;
  const waiting: Array<() => void> = [];
  const run = async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= cap) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    highWater = Math.max(highWater, active);
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
  return { run, highWater: () => highWater };
};

const agent = new http.Agent({ keepAlive: true });

const post = (url: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });

const main = async (): Promise<void> => {
  const [countText, serverUrl, modelDir, sourceFile, downloadsText, loadsText] = process.argv.slice(2);
  const count = Number(countText);
  if (serverUrl === undefined || modelDir === undefined || sourceFile === undefined)
    throw new Error(
      'usage: copy-post-floor <count> <server url> <model dir> <source file> <downloads> <loads>',
    );
  const downloads = limiter(Number(downloadsText));
  const loads = limiter(Number(loadsText));
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const name = `model-${String(i).padStart(6, '0')}`;
      await downloads.run(async () => {
        await mkdir(path.join(modelDir, name), { recursive: true });
        await copyFile(sourceFile, path.join(modelDir, name, path.basename(sourceFile)));
      });
      const status = await loads.run(() => post(`${serverUrl}/v2/repository/models/${name}/load`));
      if (status !== 200) failed++;
    }),
  );
  const report: FloorReport = {
    count,
    seconds: (performance.now() - started) / 1000,
    downloadHighWater: downloads.highWater(),
    loadHighWater: loads.highWater(),
    failed,
  };
  agent.destroy();
  process.send!(report, () => process.disconnect());
};

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
