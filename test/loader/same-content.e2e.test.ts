/**
 * End to end on the real process (`dist/cli.js`, sync mode, beside the V2 stand-in): ten models of one storage URI
 * cost one download's worth of bytes; each is its own model dir with its own marker and its own copy of the file
 * (no write to one reaches another), or a hard link of one with `--link-same-content`.
 */
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { atLeast, type LogLine } from '../helpers/log-sink';
import { overwriteInPlace } from '../helpers/file-tree';
import { sha256Of } from '../helpers/ranged-sync';
import { useTempDir } from '../helpers/temp-dir';

// The http provider asks `reuse` once a GET's headers are in: each model that fills instead still has what its
// socket took of the body before it was dropped (a few MiB on loopback). At this size that is well under half a file.
const size = 128 * 2 ** 20;
const chunkBytes = 64 * 1024;
const names = Array.from({ length: 10 }, (_, i) => `shared-${i}`);

/** Resolves once `response` takes more (drained) or never will (closed). */
const writable = (response: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.once('drain', done);
    response.once('close', done);
  });

/**
 * One file at `/model.bin` with a strong ETag (no ranges: one stream per download), written with backpressure, so
 * `served` counts the bytes a client took or the socket buffered, not a whole body queued in memory.
 */
const startStorage = async (content: Buffer, { firstChunkDelayMs = 0 } = {}) => {
  const counts = { gets: 0, served: 0 };
  const server = await startHttpServer(async (request, response) => {
    if (new URL(request.url ?? '/', 'http://storage').pathname !== '/model.bin')
      return response.writeHead(404).end();
    response.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(content.length),
      ETag: '"model-v1"',
    });
    if (request.method === 'HEAD') return response.end();
    counts.gets++;
    const delayMs = counts.gets === 1 ? firstChunkDelayMs : 0;
    for (let at = 0; at < content.length && !response.destroyed; at += chunkBytes) {
      const chunk = content.subarray(at, at + chunkBytes);
      counts.served += chunk.length;
      if (!response.write(chunk)) await writable(response);
      if (delayMs > 0) await sleep(delayMs);
    }
    response.end();
  });
  return { server, counts };
};

let standIn: V2ModelServerStandIn | undefined;
let storage: RunningHttpServer | undefined;
afterEach(async () => {
  await killAllCli();
  await storage?.close();
  await standIn?.close();
});
// Declared after the process is killed: the dir goes once nothing writes in it.
const tmp = useTempDir('same-content-e2e');

/** The sha256 of the file at `path`, read as a stream. */
const fileSha256 = async (path: string): Promise<string> => {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
};

const loadedLine = (model: string) => (log: LogLine) => log.msg === 'model loaded' && log['model'] === model;

/** Ten models of `storage`'s one URI in one models.json, synced by the real process beside the V2 stand-in. */
const startTen = async (
  content: Buffer,
  serving: { firstChunkDelayMs?: number } = {},
  flags: Readonly<Record<string, string | number | true>> = {},
) => {
  const started = await startStorage(content, serving);
  storage = started.server;
  const [configDir, modelDir] = [join(tmp.path, 'configs'), join(tmp.path, 'models')];
  mkdirSync(modelDir);
  standIn = await startV2ModelServer({ modelDir });
  const storageUri = `${storage.url}/model.bin`;
  atomicWrite(configDir, {
    'models.json': JSON.stringify(
      names.map((modelName) => ({ modelName, modelSpec: { storageUri, framework: 'sklearn' } })),
    ),
  });
  const agent = startCli(
    cliArgs({
      'config-dir': configDir,
      'model-dir': modelDir,
      'server-url': standIn.url,
      'download-concurrency': 4,
      'retry-base-ms': 10,
      'retry-max-ms': 50,
      ...flags,
    }),
  );
  for (const model of names) await agent.waitForLog(loadedLine(model), 60_000);
  return { agent, counts: started.counts, modelDir, loaded: standIn.loaded };
};

describe('models of one content on the real process', () => {
  it('downloads ten models of one storage URI once, each its own model dir with its own marker and file', async () => {
    const content = Buffer.alloc(size, 'modelsync ');
    const { agent, counts, modelDir, loaded } = await startTen(content);

    expect([...loaded].sort()).toEqual([...names].sort());
    const inodes = new Set<number>();
    for (const model of names) {
      const entries = await readdir(join(modelDir, model));
      expect(entries.filter((entry) => entry.startsWith('SUCCESS.'))).toHaveLength(1);
      expect(entries.filter((entry) => !entry.startsWith('SUCCESS.'))).toEqual(['model.bin']);
      const file = await stat(join(modelDir, model, 'model.bin'));
      expect(file.size).toBe(size);
      inodes.add(file.ino);
    }
    expect(inodes.size).toBe(names.length);
    // One body, and of each other model's GET what the server had pushed into loopback's socket buffers (a few MB)
    // before the answer's headers told the model its bytes were on disk already and the body was dropped.
    expect(counts.served).toBeGreaterThanOrEqual(size);
    expect(counts.served).toBeLessThan(1.3 * size);
    expect(agent.logs.filter((log) => log.msg === 'model filled from another model')).toHaveLength(9);
    const lines = agent.logs.filter((log) => log.msg === 'model loaded');
    expect(lines.filter((log) => log['bytes'] === size)).toHaveLength(1);
    expect(lines.filter((log) => log['filledBytes'] === size && !('bytes' in log))).toHaveLength(9);
    expect(agent.logs.filter(atLeast('error'))).toEqual([]);
    expect(await agent.signalAndWait('SIGTERM', 10_000)).toMatchObject({ code: 0 });
    // What a model server running as the files' owner may do to the model that was downloaded: the others keep theirs.
    await overwriteInPlace(join(modelDir, names[0]!, 'model.bin'));
    const sums = await Promise.all(names.map((model) => fileSha256(join(modelDir, model, 'model.bin'))));
    expect(sums.slice(1)).toEqual(names.slice(1).map(() => sha256Of(content)));
    expect(sums[0]).not.toBe(sha256Of(content));
  }, 90_000);

  it('fills the models with hard links of one file with --link-same-content', async () => {
    const { agent, modelDir } = await startTen(
      Buffer.alloc(2 ** 20, 'linked '),
      {},
      { 'link-same-content': true },
    );

    const inodes = await Promise.all(
      names.map(async (model) => (await stat(join(modelDir, model, 'model.bin'))).ino),
    );
    expect(new Set(inodes).size).toBe(1);
    const filled = agent.logs.filter((log) => log.msg === 'model filled from another model');
    expect(filled.map((log) => log['linkedBytes'])).toEqual(filled.map(() => 2 ** 20));
    expect(filled).toHaveLength(9);
  });

  it('has the models that started beside a slow download wait for it, then fill from it', async () => {
    // The first body trickles for about four seconds: the three other slots wait that long.
    const { agent, counts } = await startTen(Buffer.alloc(16 * 2 ** 20, 'slow '), { firstChunkDelayMs: 16 });

    expect(agent.logs.filter((log) => log.msg === 'model filled from another model')).toHaveLength(9);
    const lines = agent.logs.filter((log) => log.msg === 'model loaded');
    expect(lines.filter((log) => 'bytes' in log)).toHaveLength(1);
    expect(counts.gets).toBe(names.length);
    expect(agent.logs.filter((log) => log.msg === 'model step failed; retrying')).toEqual([]);
    expect(agent.logs.filter(atLeast('error'))).toEqual([]);
  });
});
