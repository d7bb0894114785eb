/** Tests of httpStorage's ranged parts: a big file over several connections, cut ranges resumed alone, versions pinned. */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { createSlots } from '../../../src/core/slots';
import { defaultDownloadLimits } from '../../../src/storage/download-limits';
import { httpStorage } from '../../../src/storage/http/http-storage';
import { partBytesFor } from '../../../src/storage/parts/part-plan';
import {
  patternBlock,
  rangedBody,
  repeatedSlice,
  type RangedBodyOptions,
} from '../../../src/testing/ranged-body';
import { effectError } from '../../helpers/effect-error';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';

const MiB = 2 ** 20;
const never = new AbortController().signal;
const size = 40 * MiB + 12_345;
const digest = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const closedRange = (range: string | undefined) => {
  const match = /^bytes=(\d+)-(\d+)$/.exec(range ?? '');
  return match === null ? undefined : { start: Number(match[1]), end: Number(match[2]) + 1 };
};

describe('httpStorage in parts', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('http-parts');
  let target: string;
  const expected = digest(repeatedSlice(patternBlock, 0, size));

  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  // Each answer at 50 MB/s, as a cloud store caps a connection: a first connection this slow is never enough alone.
  const start = async (options: Partial<RangedBodyOptions> = {}) => {
    const body = rangedBody({ size, bytesPerSecond: 50e6, ...options });
    const { url } = await serve(body.handle);
    return { body, url: `${url}/m.bin` };
  };
  const saved = async (): Promise<string> => digest(await readFile(path.join(target, 'm.bin')));

  it('fetches a big file as ranges over several connections into one file', async () => {
    const { body, url } = await start();
    const written = await httpStorage({ streams: 4 }).download(url, target, never);
    expect(await saved()).toBe(expected);
    expect(written).toEqual(new Map([['m.bin', size]]));
    const [first, ...parts] = body.requests;
    expect(first).toEqual({ method: 'GET', range: undefined, ifRange: undefined, status: 200 });
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const part of parts) expect(part).toMatchObject({ ifRange: '"v1"', status: 206 });
    // Every byte once, but what the first answer had in flight when it was dropped at its range's end (sent into
    // loopback's socket buffers, at most a range).
    expect(body.sentBytes()).toBeLessThan(size + 8 * MiB);
  });

  it('resumes a cut range from its own last byte and fetches no other range again', async () => {
    const body = rangedBody({ size, bytesPerSecond: 50e6 });
    // The fourth range (not the first answer, which spans the whole file), cut 100 kB into it.
    const cutRange = 3 * partBytesFor(size, 4);
    const { url } = await serve((request, response) => {
      if (request.headers.range?.startsWith(`bytes=${cutRange}-`) === true) body.cutAt(cutRange + 100_000);
      body.handle(request, response);
    });
    await httpStorage({ streams: 4 }).download(`${url}/m.bin`, target, never);
    expect(await saved()).toBe(expected);
    const ranges = body.requests.map((request) => closedRange(request.range)).filter((r) => r !== undefined);
    // The resume starts inside the cut range, not at its start: only the remainder is fetched again.
    const resumed = ranges.filter((r) => r.start % MiB !== 0);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.start).toBeGreaterThan(cutRange);
    expect(resumed[0]!.start).toBeLessThanOrEqual(cutRange + 100_000);
    expect(ranges.filter((r) => r.start === cutRange)).toHaveLength(1);
  });

  it('fails the attempt as a retryable `changed` when the file changes between its ranges', async () => {
    const body = rangedBody({ size, bytesPerSecond: 50e6 });
    const { url } = await serve((request, response) => {
      // The first answer is of "v1"; by the time a range is asked for, the file is "v2".
      if (request.headers.range !== undefined) body.change('"v2"');
      body.handle(request, response);
    });
    const error = await effectError(httpStorage({ streams: 4 }).download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(error.message).toContain('the download starts again');
  });

  it('fails as a retryable `changed` when a server that ignores If-Range answers a range of another Last-Modified', async () => {
    const v1 = 'Tue, 01 Dec 2020 10:00:00 GMT';
    const body = rangedBody({ size, bytesPerSecond: 50e6, etag: null, lastModified: v1 });
    // The file replaced after the first answer, by a server that serves any range asked, whatever its If-Range.
    const v2 = rangedBody({
      size,
      etag: null,
      lastModified: 'Wed, 02 Dec 2020 10:00:00 GMT',
      block: Buffer.alloc(64 * 1024, 'z'),
    });
    const { url } = await serve((request, response) => {
      if (request.headers.range === undefined) return body.handle(request, response);
      delete request.headers['if-range'];
      v2.handle(request, response);
    });
    const error = await effectError(httpStorage({ streams: 4 }).download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(v2.requests.length).toBeGreaterThan(0);
  });

  it('fails as a retryable `changed` when a range is answered gzipped, never writing its encoded bytes as the file', async () => {
    // Bytes gzip cannot shrink: each encoded range is a little longer than the range itself.
    const block = randomBytes(MiB);
    const body = rangedBody({ size, bytesPerSecond: 50e6, block });
    const { url } = await serve((request, response) => {
      const asked = closedRange(request.headers.range);
      if (asked === undefined) return body.handle(request, response);
      const encoded = gzipSync(repeatedSlice(block, asked.start, asked.end));
      response.writeHead(206, {
        etag: '"v1"',
        'content-encoding': 'gzip',
        'content-range': `bytes ${asked.start}-${asked.end - 1}/${size}`,
        'content-length': encoded.length,
      });
      response.end(encoded);
    });
    const error = await effectError(httpStorage({ streams: 4 }).download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
  });

  it('ends the download when every range is answered with an error that trickles below the minimum rate', async () => {
    const body = rangedBody({ size, bytesPerSecond: 50e6 });
    const trickles: Array<Promise<void>> = [];
    const { url } = await serve((request, response) => {
      if (request.headers.range === undefined) return body.handle(request, response);
      // 10 bytes every 20 ms of an error page: 64 KiB of it would take 2 minutes.
      response.writeHead(500, { 'content-type': 'text/html' });
      const timer = setInterval(() => response.write('try later '), 20);
      const closed = new Promise<void>((resolve) => response.on('close', resolve));
      trickles.push(closed.then(() => clearInterval(timer)));
    });
    const limits = { ...defaultDownloadLimits, minRate: { bytesPerSecond: 10 * 1024, windowMs: 300 } };
    const error = await effectError(
      httpStorage({ streams: 4, limits }).download(`${url}/m.bin`, target, never),
    );
    expect(error.retryable).toBe(true);
    expect(trickles.length).toBeGreaterThan(0);
    await Promise.all(trickles);
  });

  it('reads one stream from a server that does not serve ranges', async () => {
    const { body, url } = await start({ ranges: false });
    await httpStorage({ streams: 4 }).download(url, target, never);
    expect(await saved()).toBe(expected);
    expect(body.requests).toHaveLength(1);
  });

  it('reads one stream when nothing pins a version (no ETag, no Last-Modified), and with one stream asked', async () => {
    const unpinned = await start({ etag: null });
    await httpStorage({ streams: 4 }).download(unpinned.url, target, never);
    expect(unpinned.body.requests).toHaveLength(1);
    const other = path.join(tmp.path, 'other');
    await mkdir(other);
    const single = await start();
    await httpStorage({ streams: 1 }).download(single.url, other, never);
    expect(single.body.requests).toHaveLength(1);
    expect((await stat(path.join(other, 'm.bin'))).size).toBe(size);
  });

  it('holds the connections of every file within the shared pool', async () => {
    const { body, url } = await start();
    const pool = createSlots(2);
    await httpStorage({ streams: 8, pool }).download(url, target, never);
    expect(await saved()).toBe(expected);
    expect(pool.highWater()).toBe(2);
    expect(body.requests.length).toBeGreaterThan(2);
  });
});
