/**
 * Ranged downloads from an http server on the real process (`dist/cli.js` in sync mode, up to the load request),
 * seen from a metered TCP relay in front of the server: many ranges at once, a cut range resumed alone, a file
 * changed mid-way fetched again whole, and the one-stream path for servers without ranges or validators.
 */
import { join } from 'node:path';
import { partBytesFor } from '../../../src/storage/parts/part-plan';
import { rangedBody, type RangedBody, type RangedBodyOptions } from '../../../src/testing/ranged-body';
import { killAllCli } from '../../helpers/cli-process';
import { listTree } from '../../helpers/file-tree';
import { useHttpServers } from '../../helpers/http-servers';
import { useMeteredRelays, type MeteredRelay, type RelayedRequest } from '../../helpers/metered-relay';
import {
  afterCut,
  compareFile,
  coverage,
  logsOf,
  mebibyte,
  stampedBytes,
  useSyncRuns,
} from '../../helpers/ranged-sync';
import { useTempDir } from '../../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('ranged-http');
const serve = useHttpServers();
const relayTo = useMeteredRelays();
const runs = useSyncRuns();

// 64 MiB with 8 streams: 16 ranges of 4 MiB (partBytesFor), two per connection.
const size = 64 * mebibyte;
const rangeBytes = partBytesFor(size, 8);
let v1: Buffer;
let v2: Buffer;
beforeAll(() => {
  v1 = stampedBytes(size, 'v1');
  v2 = stampedBytes(size, 'v2');
});

/** A server of `bodies` (the first served first; `use(i)` switches), behind a relay at `bytesPerSecond`. */
const serveBodies = async (
  bodies: ReadonlyArray<RangedBodyOptions>,
  bytesPerSecond: number | null,
): Promise<{ relay: MeteredRelay; uri: string; served: RangedBody[]; use: (index: number) => void }> => {
  const served = bodies.map((options) => rangedBody(options));
  let current = served[0]!;
  const server = await serve((request, response) => current.handle(request, response));
  const relay = await relayTo(server.port, { bytesPerSecond });
  return { relay, uri: `${relay.url}/weights.bin`, served, use: (index) => void (current = served[index]!) };
};

describe('ranged http downloads on the real process', () => {
  it('fetches a 64 MiB file over at least 4 connections at once when each is held to 20 MB/s', async () => {
    const { relay, uri } = await serveBodies([{ size, block: v1 }], 20e6);
    const run = await runs.start(tmp.path, { models: { big: uri }, flags: { 'download-streams': 8 } });

    await run.loaded('big');

    expect(relay.peakActive).toBeGreaterThanOrEqual(4);
    const ranged = relay.requests.filter((request) => request.range !== undefined);
    expect(ranged.length).toBeGreaterThanOrEqual(7);
    expect(new Set(relay.requests.map((request) => request.connection)).size).toBeGreaterThanOrEqual(4);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
  });

  it('holds a file to --max-download-streams connections at once, whatever --download-streams says', async () => {
    const { relay, uri } = await serveBodies([{ size, block: v1 }], 20e6);
    const run = await runs.start(tmp.path, {
      models: { big: uri },
      flags: { 'download-streams': 8, 'max-download-streams': 2 },
    });

    await run.loaded('big');

    // Two at once, and for a tick a third: the first GET's connection, dropped at its range's end, still drains what
    // the relay had taken for it while its slot's next range starts on a new connection.
    expect(relay.peakActive).toBeGreaterThanOrEqual(2);
    expect(relay.peakActive).toBeLessThanOrEqual(3);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
  });

  it.each([
    ['a ranged read', (request: RelayedRequest) => request.range !== undefined],
    [
      'the first GET, whose body serves the first range',
      (request: RelayedRequest) => request.range === undefined,
    ],
  ])(
    'resumes a range cut mid-way (%s) from its last written byte, the others untouched',
    async (_what, which) => {
      const { relay, uri } = await serveBodies([{ size, block: v1 }], 20e6);
      const cut = relay.cut({ afterBytes: rangeBytes / 2, request: which });
      const run = await runs.start(tmp.path, { models: { big: uri }, flags: { 'download-streams': 8 } });

      const made = await cut;
      await run.loaded('big');

      expect(made.bodyBytes).toBeGreaterThan(rangeBytes / 4);
      // One read picks up right after the bytes the cut response delivered; none asks for any of them again.
      const first = made.request?.range?.first ?? 0;
      expect(afterCut(relay.requests, made)).toEqual({
        resumedAt: [first + made.bodyBytes],
        fetchedAgain: [],
      });
      // What crossed besides the file: heads, and what a connection was sent past the end of its range before it
      // stopped reading (the first GET's body beyond the first range).
      expect(relay.bytesToClients).toBeLessThanOrEqual(size + rangeBytes);
      expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
      // Within the one attempt: the loader saw no failure.
      expect(logsOf(run.cli, 'big', 'model step failed; retrying')).toEqual([]);
    },
  );

  it('resumes one stream (--download-streams 1) cut mid-way from the last byte it took in, as before', async () => {
    const { relay, uri } = await serveBodies([{ size, block: v1 }], null);
    const cut = relay.cut({ afterBytes: 20 * mebibyte });
    const run = await runs.start(tmp.path, { models: { big: uri }, flags: { 'download-streams': 1 } });

    const made = await cut;
    await run.loaded('big');

    // One resume, from the bytes the body handed over: what undici still held in the body's buffer when the
    // connection closed is dropped with it (at most its 64 KiB highWaterMark and one socket read), so on a busy
    // machine the resume may start a little before the relay's count.
    const [whole, resume, ...more] = relay.requests.map((request) => request.range);
    expect([whole, more]).toEqual([undefined, []]);
    // To the end of the file: no last byte.
    expect(resume?.last).toBeUndefined();
    expect(resume?.first).toBeLessThanOrEqual(made.bodyBytes);
    expect(resume?.first).toBeGreaterThan(made.bodyBytes - 256 * 1024);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
    expect(logsOf(run.cli, 'big', 'model step failed; retrying')).toEqual([]);
  });

  it('fails the attempt `changed` when the file changes mid-way and loads the new version, fetched whole', async () => {
    const { relay, uri, use } = await serveBodies(
      [
        { size, block: v1, etag: '"v1"' },
        { size, block: v2, etag: '"v2"' },
      ],
      10e6,
    );
    // Two streams: the ranges are asked for one after another, so some are asked after the change.
    const run = await runs.start(tmp.path, { models: { big: uri }, flags: { 'download-streams': 2 } });
    await relay.whenRelayed(12 * mebibyte);
    const requestsBeforeChange = relay.requests.length;
    use(1);

    await run.cli.waitForLog((log) => log.msg === 'model step failed; retrying', 20_000);
    // Faster, still held per connection as a store holds it: the retry is in ranges too.
    relay.setRate(50e6);
    await run.loaded('big');

    const [retrying] = logsOf(run.cli, 'big', 'model step failed; retrying');
    expect(retrying).toMatchObject({ errorKind: 'changed', attempt: 1 });
    expect(String(retrying!['reason'])).toContain('the file changed on the server');
    expect(run.cli.logs.indexOf(retrying!)).toBeLessThan(
      run.cli.logs.findIndex((log) => log.msg === 'model loaded'),
    );
    // Each attempt starts with a plain GET. The first asked for ranges of "v1" after the change; the retry got
    // every byte of "v2" again, from 0 (its GET's body serves the first range).
    const plainGets = relay.requests.flatMap((request, index) =>
      request.range === undefined ? [index] : [],
    );
    expect(plainGets).toHaveLength(2);
    const retryAt = plainGets[1]!;
    expect(relay.requests.slice(requestsBeforeChange, retryAt).some((r) => r.range !== undefined)).toBe(true);
    const retried = relay.requests.slice(retryAt + 1).map((request) => request.range);
    const firstRange = { first: 0, last: partBytesFor(size, 2) - 1 };
    expect(coverage([firstRange, ...retried], size)).toEqual([[0, size - 1]]);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v2)).toBe('identical');
    expect((await listTree(run.modelDir)).filter((entry) => entry.includes('.tmp-'))).toEqual([]);
  });

  it('loads a file exactly as big as --max-model-bytes when it is fetched in ranges', async () => {
    // One stream counts each byte once; in ranges, what the first GET's body brings past the first range (read and
    // dropped when that range is full) must not count against the cap either.
    const { uri } = await serveBodies([{ size, block: v1 }], 20e6);
    const run = await runs.start(tmp.path, {
      models: { big: uri },
      flags: { 'download-streams': 8, 'max-model-bytes': size },
    });

    const outcome = await run.cli.waitForLog(
      (log) => log['model'] === 'big' && (log.msg === 'model loaded' || log.msg === 'model failed'),
      25_000,
    );

    expect([outcome.msg, outcome['reason']]).toEqual(['model loaded', undefined]);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
  });

  it('fetches ranges pinned to Last-Modified when the server sends no ETag', async () => {
    const lastModified = 'Tue, 01 Dec 2020 10:00:00 GMT';
    const { relay, uri, served } = await serveBodies([{ size, block: v1, etag: null, lastModified }], 20e6);
    const run = await runs.start(tmp.path, { models: { big: uri }, flags: { 'download-streams': 8 } });

    await run.loaded('big');

    const ranged = served[0]!.requests.filter((request) => request.range !== undefined);
    expect(ranged.length).toBeGreaterThanOrEqual(7);
    expect(ranged.map((request) => [request.ifRange, request.status])).toEqual(
      ranged.map(() => [lastModified, 206]),
    );
    expect(relay.requests.length).toBe(served[0]!.requests.length);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
  });

  it.each([
    ['a server that serves no ranges (Accept-Ranges: none)', { ranges: false }],
    ['a server that sends neither ETag nor Last-Modified', { etag: null }],
  ] as const)('reads the file as one stream from %s', async (_what, options) => {
    const { relay, uri, served } = await serveBodies([{ size, block: v1, ...options }], null);
    const run = await runs.start(tmp.path, { models: { big: uri }, flags: { 'download-streams': 8 } });

    await run.loaded('big');

    expect(relay.requests).toEqual([{ connection: 1, method: 'GET', target: '/weights.bin' }]);
    expect(served[0]!.requests).toEqual([
      { method: 'GET', range: undefined, ifRange: undefined, status: 200 },
    ]);
    expect(await compareFile(join(run.modelDir, 'big', 'weights.bin'), v1)).toBe('identical');
  });
});
