/**
 * Storage faults through the loader on the real edges: refusals and 4xx fail a model at once, 429/5xx, resets,
 * trickles, silence and cut bodies are retried until storage behaves, caps fail for good; no staging dir stays.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { add } from '../../../src/core/model-op';
import type { ModelStatus } from '../../../src/core/model-status';
import type { HttpHandler } from '../../../src/testing/http-server';
import { name, spec } from '../../helpers/fixtures';
import { useHttpServers } from '../../helpers/http-servers';
import type { LoaderHarness } from '../../helpers/loader-harness';
import { rawReply, trickle } from '../../helpers/raw-http';
import { startStorageServer, type StorageServer } from '../../helpers/storage-server';
import { harnessesPerTest } from '../../loader/loader-checks';
import { tarball } from '../../storage/archive/builders';

const MiB = 2 ** 20;
const m = name('m');
const files = { 'model/weights.bin': 'w'.repeat(5000), 'model/config.json': '{"a":1}' };

/** Short timeouts and a minimum rate measurable in a test: 16 KiB/s over 400 ms. */
const config = {
  requestTimeoutMs: 400,
  minDownloadRate: 16 * 1024,
  minRateWindowMs: 400,
  maxModelBytes: MiB,
};

/** Answers the first `times` requests with `fault`, the others with `healthy`. */
const faultyFirst = (times: number, fault: HttpHandler, healthy: HttpHandler) => {
  let seen = 0;
  const handler: HttpHandler = (req, res) => (seen++ < times ? fault(req, res) : healthy(req, res));
  return { handler, requests: () => seen };
};

const ok =
  (body: Buffer | string): HttpHandler =>
  (_req, res) =>
    res.writeHead(200, { 'content-length': Buffer.byteLength(body) }).end(body);

describe('storage faults', () => {
  const { started } = harnessesPerTest();
  const serve = useHttpServers();
  let storage: StorageServer;
  beforeEach(async () => {
    storage = await startStorageServer();
    await storage.tarGz('/m.tgz', files);
    await storage.zip('/m.zip', files);
    storage.file('/m.bin', 'weights', 'application/octet-stream');
  });
  afterEach(() => storage.close());

  const harness = (): Promise<LoaderHarness> => started({ maxAttempts: 3, config });

  /** The Retrying statuses the model went through, in order. */
  const retrying = (h: LoaderHarness): ModelStatus[] =>
    h.events.flatMap((e) => (e._tag === 'Status' && e.status.phase === 'Retrying' ? [e.status] : []));

  /** Staging (`.tmp-*`) and replaced (`.old-*`) dirs left in the model dir. */
  const leftovers = async (h: LoaderHarness): Promise<string[]> =>
    (await h.modelDirEntries()).filter((entry) => entry.startsWith('.tmp-') || entry.startsWith('.old-'));

  const runToEnd = async (h: LoaderHarness, uri: string, phase: 'Loaded' | 'Failed'): Promise<void> => {
    h.push(add(m, spec(uri)));
    await h.waitForPhase(m, phase, undefined, 15_000);
    await h.waitForIdle();
  };

  it.each([401, 403, 404, 410])(
    'fails a model for good on %i after one request, leaving nothing',
    async (status) => {
      const h = await harness();
      storage.fail('/m.tgz', status);
      await runToEnd(h, `${storage.url}/m.tgz`, 'Failed');
      expect(h.phases(m)).toEqual(['Downloading', 'Failed']);
      expect(h.statusOf(m)).toMatchObject({ errorKind: 'http-status' });
      expect(h.statusOf(m)?.reason).toContain(`returned HTTP ${status}`);
      expect(storage.requestsFor('/m.tgz')).toBe(1);
      expect(await h.modelDirEntries()).not.toContain('m');
      expect(await leftovers(h)).toEqual([]);
    },
  );

  it.each([429, 500, 502, 503, 504])(
    'retries %i and loads the model once storage answers',
    async (status) => {
      const h = await harness();
      storage.fail('/m.tgz', status, 2);
      await runToEnd(h, `${storage.url}/m.tgz`, 'Loaded');
      expect(h.phases(m)).toEqual([
        'Downloading',
        'Retrying',
        'Downloading',
        'Retrying',
        'Downloading',
        'Loading',
        'Loaded',
      ]);
      expect(storage.requestsFor('/m.tgz')).toBe(3);
      expect(await readFile(join(h.modelDir, 'm', 'model', 'config.json'), 'utf8')).toBe('{"a":1}');
      expect(await leftovers(h)).toEqual([]);
    },
  );

  it('fails a model after --max-attempts 503s, leaving nothing', async () => {
    const h = await harness();
    storage.fail('/m.tgz', 503);
    await runToEnd(h, `${storage.url}/m.tgz`, 'Failed');
    expect(h.statusOf(m)).toMatchObject({ errorKind: 'http-status', attempt: 3 });
    expect(storage.requestsFor('/m.tgz')).toBe(3);
    expect(await leftovers(h)).toEqual([]);
  });

  it.each(['/m.bin', '/m.tgz', '/m.zip'])(
    'retries a body reset mid-stream (%s) and installs it whole once it comes',
    async (path) => {
      const h = await harness();
      storage.cut(path, 2);
      await runToEnd(h, `${storage.url}${path}`, 'Loaded');
      expect(h.statusOf(m)?.phase).toBe('Loaded');
      expect(storage.requests.filter((r) => r.path === path).map((r) => r.cut)).toEqual([true, true, false]);
      expect(retrying(h).map((s) => s.errorKind)).toEqual(['network', 'network']);
      expect(await leftovers(h)).toEqual([]);
    },
  );

  it('fails a model whose body is reset every time after --max-attempts (network)', async () => {
    const h = await harness();
    storage.cut('/m.zip', 10);
    await runToEnd(h, `${storage.url}/m.zip`, 'Failed');
    expect(h.statusOf(m)).toMatchObject({ errorKind: 'network', attempt: 3 });
    expect(await leftovers(h)).toEqual([]);
  });

  it('drops a trickling download as too slow (timeout) and loads the model once storage is fast again', async () => {
    const h = await harness();
    const server = faultyFirst(1, trickle(Buffer.alloc(64, 1), 50, 10_000), ok('weights'));
    const { url } = await serve(server.handler);
    await runToEnd(h, `${url}/m.bin`, 'Loaded');
    const retries = retrying(h);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ errorKind: 'timeout' });
    expect(retries[0]!.reason).toContain('too slow');
    expect(server.requests()).toBe(2);
    expect(await leftovers(h)).toEqual([]);
  });

  it('times out a storage server that never answers, and fails the model after --max-attempts', async () => {
    const h = await harness();
    const { url } = await serve(() => undefined);
    await runToEnd(h, `${url}/m.bin`, 'Failed');
    expect(h.statusOf(m)).toMatchObject({ errorKind: 'timeout', attempt: 3 });
    expect(h.statusOf(m)?.reason).toContain('timed out: no response within 400 ms');
    expect(await leftovers(h)).toEqual([]);
  });

  it('retries a close-delimited tar that ends early, and installs it once it comes whole', async () => {
    const h = await harness();
    const tar = tarball([
      { name: 'a.bin', content: 'a'.repeat(600) },
      { name: 'b.bin', content: 'b' },
    ]);
    const server = faultyFirst(
      1,
      rawReply('HTTP/1.1 200 OK\nConnection: close', tar.subarray(0, 1536)),
      ok(tar),
    );
    const { url } = await serve(server.handler);
    await runToEnd(h, `${url}/m.tar`, 'Loaded');
    expect(retrying(h).map((s) => s.errorKind)).toEqual(['invalid-archive']);
    expect(await readFile(join(h.modelDir, 'm', 'b.bin'), 'utf8')).toBe('b');
    expect(await leftovers(h)).toEqual([]);
  });

  it('fails for good, after one request, a body past --max-model-bytes', async () => {
    const h = await harness();
    storage.file('/big.bin', Buffer.alloc(MiB + 1), 'application/octet-stream');
    await runToEnd(h, `${storage.url}/big.bin`, 'Failed');
    expect(h.phases(m)).toEqual(['Downloading', 'Failed']);
    expect(h.statusOf(m)).toMatchObject({ errorKind: 'too-large' });
    expect(h.statusOf(m)?.reason).toContain('(--max-model-bytes)');
    expect(storage.requestsFor('/big.bin')).toBe(1);
    expect(await leftovers(h)).toEqual([]);
  });

  it.each([
    ['a path under /proc', '/proc/self/environ', 'refused', 'it lies under /proc'],
    ['a path outside the local roots', '/etc/hostname', 'refused', 'outside --local-storage-roots'],
  ])('fails for good, at once, %s', async (_label, uri, errorKind, why) => {
    const h = await harness();
    await runToEnd(h, uri, 'Failed');
    expect(h.phases(m)).toEqual(['Downloading', 'Failed']);
    expect(h.statusOf(m)).toMatchObject({ errorKind });
    expect(h.statusOf(m)?.reason).toContain(why);
    expect(await h.modelDirEntries()).not.toContain('m');
    expect(await leftovers(h)).toEqual([]);
  });
});
