/**
 * A running download's progress on /metrics of the real process (issue 27, item 10): while a storage server hands
 * out a model's bytes a chunk at a time, the model's gauges show the bytes moved so far (growing, never past the
 * total) and the total the storage announced; once the download has ended, neither series is left.
 */
import type { ServerResponse } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { surfacePaths } from '../../src/surface/http-surface';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import { useTempDir } from '../helpers/temp-dir';
import { freePort, get, sample } from './surface-kit';

const chunk = 16 * 1024;
const chunks = 3;

let standIn: V2ModelServerStandIn | undefined;
let storage: RunningHttpServer | undefined;
afterEach(async () => {
  await killAllCli();
  await storage?.close();
  await standIn?.close();
  storage = standIn = undefined;
});
const tmp = useTempDir('download-metrics');

/** A storage server that sends `/slow.bin`'s Content-Length and first chunk, then one more chunk per `next()`. */
const startTrickle = async () => {
  const waiting: ServerResponse[] = [];
  let sent = 0;
  storage = await startHttpServer((_request, response) => {
    response.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(chunk * chunks),
    });
    response.write(Buffer.alloc(chunk, 'a'));
    sent = 1;
    waiting.push(response);
  });
  return {
    url: `${storage.url}/slow.bin`,
    next: (): void => {
      const response = waiting[0]!;
      sent += 1;
      if (sent < chunks) response.write(Buffer.alloc(chunk, 'a'));
      else response.end(Buffer.alloc(chunk, 'a'));
    },
  };
};

/** The download gauges of `page`: every series of either, as written. */
const downloadSeries = (page: string): string[] =>
  page.split('\n').filter((line) => /^modelsync_download_(progress|size)_bytes\{/.test(line));

describe('the download gauges of /metrics on the agent process', () => {
  it("show a running download's bytes, growing and within its total, and are gone once it has ended", async () => {
    const trickle = await startTrickle();
    const modelDir = join(tmp.path, 'models');
    mkdirSync(modelDir, { recursive: true });
    standIn = await startV2ModelServer({ modelDir });
    const configDir = join(tmp.path, 'configs');
    atomicWrite(configDir, { 'models.json': modelsJson({ slow: trickle.url }) });
    const port = await freePort();
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'http-port': port,
        'progress-interval-ms': 50,
        // The test holds the body between chunks for as long as it takes to see the gauges.
        'min-download-rate': 0,
      }),
    );
    await agent.waitForLog('HTTP surface listening', 10_000);

    const progress = 'modelsync_download_progress_bytes{model="slow"}';
    const size = 'modelsync_download_size_bytes{model="slow"}';
    const scraped: Array<[number, number]> = [];
    const gaugesReach = async (bytes: number): Promise<void> =>
      waitFor(
        async () => {
          const page = (await get(port, surfacePaths.metrics)).body;
          scraped.push([sample(page, progress), sample(page, size)]);
          if (sample(page, progress) === bytes) return true;
          await sleep(50); // a scrape is not free: a few a second is plenty
          return false;
        },
        20_000,
        `${progress} at ${bytes}`,
      );
    // Each chunk held until the gauge shows it; the last one ends the body.
    for (let sent = 1; sent < chunks; sent++) {
      await gaugesReach(sent * chunk);
      trickle.next();
    }

    const shown = scraped.filter(([bytes]) => bytes > 0);
    expect(shown.every(([bytes, total]) => total === chunks * chunk && bytes <= total)).toBe(true);
    expect(shown.map(([bytes]) => bytes)).toEqual([...shown.map(([bytes]) => bytes)].sort((a, b) => a - b));
    await agent.waitForLog('model loaded', 20_000);
    expect(downloadSeries((await get(port, surfacePaths.metrics)).body)).toEqual([]);
  }, 60_000);
});
