/**
 * The node cache (`--node-cache-dir`) on real processes (`dist/cli.js`), each with its own model dir and V2 stand-in,
 * all sharing one cache dir as the modelsyncs of one node would: the store serves a model's bytes once for them all,
 * a second wave takes them from the cache, a killed downloader's lock passes to another, and what a neighbour plants
 * in the cache dir is never followed or used.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync } from 'node:fs';
import { lstat, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { waitFor } from '../../src/testing/wait';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { rangedBody, type RangedBody } from '../../src/testing/ranged-body';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';
import { freePort, get, getJson, sample } from './surface-kit';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('node-cache-e2e');

const MiB = 2 ** 20;
const modelBytes = 256 * MiB;
const block = randomBytes(64 * 1024);
/** The sha256 of the body the store serves: `block` repeated up to `modelBytes`. */
const expectedSha = (() => {
  const hash = createHash('sha256');
  for (let offset = 0; offset < modelBytes; offset += block.length) hash.update(block);
  return hash.digest('hex');
})();

const sha256Of = (file: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });

describe('the node cache shared by the modelsyncs of one node', () => {
  let store: RunningHttpServer | undefined;
  let body: RangedBody;
  const servers: V2ModelServerStandIn[] = [];
  beforeEach(async () => {
    // Each answer capped as a store caps a connection: on loopback an uncapped server writes megabytes into a
    // socket in the moment a busy agent takes to drop a body it does not need (the identity probe, below).
    body = rangedBody({ size: modelBytes, block, bytesPerSecond: 128 * MiB });
    store = await startHttpServer(body.handle);
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    await store?.close();
  });

  /** One pod: its own config and model dirs and stand-in, the node's cache dir; the model `llm` listed. */
  const pod = async (
    name: string,
    cacheDir: string,
    env: Readonly<Record<string, string>> = {},
    flags: Readonly<Record<string, string | number>> = {},
  ) => {
    const configDir = join(tmp.path, name, 'config');
    const modelDir = join(tmp.path, name, 'models');
    mkdirSync(modelDir, { recursive: true });
    const storageUri = `${store!.url}/llm/model.bin`;
    atomicWrite(configDir, {
      'models.json': JSON.stringify([{ modelName: 'llm', modelSpec: { storageUri, framework: 'onnx' } }]),
    });
    const server = await startV2ModelServer({ modelDir });
    servers.push(server);
    const port = await freePort();
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': server.url,
        'node-cache-dir': cacheDir,
        'http-port': port,
        'retry-base-ms': 50,
        'retry-max-ms': 200,
        ...flags,
      }),
      { env },
    );
    const list = (models: Readonly<Record<string, string>>): unknown =>
      atomicWrite(configDir, {
        'models.json': JSON.stringify(
          Object.entries(models).map(([modelName, path]) => ({
            modelName,
            modelSpec: { storageUri: `${store!.url}${path}`, framework: 'onnx' },
          })),
        ),
      });
    /** Where `llm`'s files came from (/status), and the node cache's counters (/metrics). */
    const told = async () => {
      const metrics = (await get(port, '/metrics')).body;
      const count = (what: string): number => sample(metrics, `modelsync_node_cache_${what}_total`);
      return {
        filesFrom: (await getJson(port, '/status/llm')).json['filesFrom'],
        hits: count('hits'),
        misses: count('misses'),
        savedBytes: count('saved_bytes'),
      };
    };
    return { agent, server, port, file: join(modelDir, 'llm', 'model.bin'), list, told };
  };
  type Pod = Awaited<ReturnType<typeof pod>>;

  const allReady = (pods: ReadonlyArray<Pod>): Promise<unknown> =>
    Promise.all(pods.map(({ agent }) => agent.waitForLog('start-up sync complete; ready', 120_000)));

  it('serves the model once for six pods starting at once, then none for six more; every file exact and read-only', async () => {
    const cacheDir = join(tmp.path, 'node-a-cache');
    const first = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => pod(`a${i}`, cacheDir)));
    await allReady(first);
    // The model once: each pod learns the ETag from a HEAD, and the five that do not download it wait for the one.
    expect(body.sentBytes()).toBeLessThanOrEqual(modelBytes * 1.1);
    expect(body.requests.filter((r) => r.method === 'HEAD')).toHaveLength(6);
    for (const { server } of first) expect(server.loaded).toEqual(new Set(['llm']));
    const inodes = new Set<number>();
    for (const { file } of first) {
      const info = await stat(file);
      expect(info.size).toBe(modelBytes);
      expect(info.mode & 0o222).toBe(0);
      inodes.add(info.ino);
    }
    // One set of bytes on the node: every model dir and the cache entry hold the same read-only inode.
    expect(inodes.size).toBe(1);
    expect(await sha256Of(first[0]!.file)).toBe(expectedSha);
    // Told: one pod downloaded it for the node, five filled it from the cache.
    const firstTold = await Promise.all(first.map(({ told }) => told()));
    expect(firstTold.filter((t) => t.filesFrom === 'storage' && t.misses === 1 && t.hits === 0)).toHaveLength(
      1,
    );
    expect(
      firstTold.filter((t) => t.filesFrom === 'node-cache' && t.hits === 1 && t.savedBytes === modelBytes),
    ).toHaveLength(5);
    const sentAfterFirst = body.sentBytes();

    const second = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => pod(`b${i}`, cacheDir)));
    await allReady(second);
    for (const { agent, server, file } of second) {
      expect(server.loaded).toEqual(new Set(['llm']));
      expect((await stat(file)).ino).toBe([...inodes][0]);
      expect(agent.logs.some((log) => log.msg === 'model filled from the node cache')).toBe(true);
    }
    expect(await Promise.all(second.map(({ told }) => told()))).toEqual(
      second.map(() => ({ filesFrom: 'node-cache', hits: 1, misses: 0, savedBytes: modelBytes })),
    );
    // Each pod still asked the store for the content's ETag with its own credentials, by a HEAD: no byte of the body.
    expect(body.sentBytes() - sentAfterFirst).toBe(0);
  });

  it('passes the lock of a downloader killed with SIGKILL to another pod, which downloads it; nothing partial is used', async () => {
    const cacheDir = join(tmp.path, 'node-b-cache');
    // Slow enough (8 MiB/s an answer, a few answers at once) that the kill comes well before the download ends.
    const slow = rangedBody({ size: modelBytes, block, bytesPerSecond: 8 * MiB });
    await store!.close();
    store = await startHttpServer(slow.handle);
    const downloader = await pod('k1', cacheDir);
    await downloader.agent.waitForLog((log) => log.msg === 'model downloading', 60_000);
    const waiter = await pod('k2', cacheDir);
    await waiter.agent.waitForLog((log) => log.msg === 'model downloading', 60_000);
    await waitFor(() => slow.sentBytes() > 8 * MiB, 60_000, 'the first pod downloading');
    await downloader.agent.signalAndWait('SIGKILL');
    await waiter.agent.waitForLog('start-up sync complete; ready', 120_000);
    expect(waiter.server.loaded).toEqual(new Set(['llm']));
    expect(downloader.server.loaded).toEqual(new Set());
    // The first pod died mid-download, before it put anything into the cache; the second downloaded it all itself.
    expect(downloader.agent.logs.some((log) => log.msg === 'model put into the node cache')).toBe(false);
    expect(waiter.agent.logs.some((log) => log.msg === 'model filled from the node cache')).toBe(false);
    await waiter.agent.waitForLog('model put into the node cache', 30_000);
    expect(slow.sentBytes()).toBeGreaterThan(modelBytes);
    expect(await sha256Of(waiter.file)).toBe(expectedSha);
    const entries = (await readdir(cacheDir)).filter((entry) => !entry.endsWith('.lock'));
    expect(entries).toHaveLength(1);
  });

  it('never follows nor uses what a neighbour planted in the cache dir: links, a short file', async () => {
    const cacheDir = join(tmp.path, 'node-c-cache');
    // A first pod fills the cache; then every entry is replaced by what a hostile pod on the node could plant.
    const seed = await pod('c1', cacheDir);
    await seed.agent.waitForLog('model put into the node cache', 120_000);
    const [entry] = (await readdir(cacheDir)).filter((name) => !name.endsWith('.lock'));
    const entryDir = join(cacheDir, entry!);
    const victim = join(tmp.path, 'victim.bin');
    await writeFile(victim, 'not a model');
    await rm(join(entryDir, 'model.bin'));
    await symlink(victim, join(entryDir, 'model.bin'));
    const sentBefore = body.sentBytes();
    const next = await pod('c2', cacheDir);
    await next.agent.waitForLog('start-up sync complete; ready', 120_000);
    expect(next.server.loaded).toEqual(new Set(['llm']));
    // Downloaded, not filled: the planted link was not followed, and the victim is as it was.
    expect(body.sentBytes() - sentBefore).toBeGreaterThanOrEqual(modelBytes);
    expect((await lstat(next.file)).isFile()).toBe(true);
    expect(await sha256Of(next.file)).toBe(expectedSha);
    expect((await stat(victim)).size).toBe('not a model'.length);
    // The planted entry was replaced by the one this pod put in.
    await next.agent.waitForLog('model put into the node cache', 30_000);
    expect((await lstat(join(entryDir, 'model.bin'))).isFile()).toBe(true);
  });

  it('gives a cached model to no pod the store refuses: the entry is found only after the store answered it', async () => {
    const cacheDir = join(tmp.path, 'node-d-cache');
    const token = 'Bearer s3cr3t-reader';
    await store!.close();
    // The store answers only requests that carry the reader's token.
    store = await startHttpServer((request, response) => {
      if (request.headers.authorization !== token) {
        response.writeHead(403).end('forbidden');
        return;
      }
      body.handle(request, response);
    });
    const reader = await pod('d1', cacheDir, {
      '127.0.0.1-headers': JSON.stringify({ Authorization: token }),
    });
    await reader.agent.waitForLog('model put into the node cache', 120_000);
    const stranger = await pod('d2', cacheDir);
    const failed = await stranger.agent.waitForLog(
      (log) => log['model'] === 'llm' && log['phase'] === 'Failed',
      60_000,
    );
    expect(failed['reason']).toEqual(expect.stringContaining('403'));
    expect(stranger.server.loaded).toEqual(new Set());
    expect(stranger.agent.logs.some((log) => log.msg === 'model filled from the node cache')).toBe(false);
    await expect(stat(stranger.file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('evicts, past --node-cache-max-bytes, the entry no model dir links any more, never the ones in use', async () => {
    const cacheDir = join(tmp.path, 'node-e-cache');
    const entries = async (): Promise<string[]> =>
      (await readdir(cacheDir)).filter((name) => !name.endsWith('.lock') && !name.startsWith('.')).sort();
    const only = await pod('e1', cacheDir, {}, { 'node-cache-max-bytes': modelBytes + MiB });
    await only.agent.waitForLog('model put into the node cache', 120_000);
    const [first] = await entries();
    // The pod now lists another model instead: its first one leaves the model dir, and with it the link.
    const logsBefore = only.agent.logs.length;
    only.list({ other: '/other/model.bin' });
    await only.agent.waitForLog('model put into the node cache', 120_000, logsBefore);
    await only.agent.waitForLog('node cache entry evicted', 30_000, logsBefore);
    const now = await entries();
    expect(now).toHaveLength(1);
    expect(now).not.toContain(first);
    expect(only.server.loaded).toEqual(new Set(['other']));
    expect(await only.told()).toMatchObject({ misses: 2, hits: 0 });
    expect(sample((await get(only.port, '/metrics')).body, 'modelsync_node_cache_evictions_total')).toBe(1);
  });
});
