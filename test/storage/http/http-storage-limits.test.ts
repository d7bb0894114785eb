/** Tests of httpStorage's limits on real servers: the model cap, the minimum rate, bodies cut short. */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DownloadLimits } from '../../../src/storage/download-limits';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { httpStorage } from '../../../src/storage/http/http-storage';
import { writeRepeated } from '../../../src/testing/http-server';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useHttpServers } from '../../helpers/http-servers';
import { rawReply, trickle } from '../../helpers/raw-http';
import { useTempDir } from '../../helpers/temp-dir';
import { tarball, tgz, zipArchive } from '../archive/builders';

const never = new AbortController().signal;
const MiB = 2 ** 20;

describe('httpStorage limits', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('http-limits');
  let target: string;

  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  const limited = (limits: Partial<DownloadLimits>) =>
    httpStorage({ limits: { ...cliDownloadLimits, ...limits } });

  describe('--max-model-bytes', () => {
    it('fails permanently before reading a body whose Content-Length is above the cap', async () => {
      const { url } = await serve((_req, res) => {
        res.writeHead(200, { 'content-length': 64 * MiB, 'content-type': 'application/octet-stream' });
        writeRepeated(res, Buffer.alloc(MiB, 1), 64 * MiB);
      });
      const error = await effectError(
        limited({ maxModelBytes: MiB }).download(`${url}/m.bin`, target, never),
      );
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(error.message).toBe(
        `GET ${url}/m.bin: too large: it is 64 MiB, over the cap of 1 MiB (--max-model-bytes)`,
      );
      expect(await listTree(target)).toEqual([]);
    });

    it.each([
      ['a file', '/m.bin'],
      ['a tar', '/m.tar'],
    ])('aborts %s sent without Content-Length once it passes the cap, for good', async (_label, urlPath) => {
      const { url } = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        writeRepeated(res, Buffer.alloc(64 * 1024, 0), 2 ** 40);
      });
      const error = await effectError(
        limited({ maxModelBytes: MiB }).download(`${url}${urlPath}`, target, never),
      );
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(error.message).toBe(
        `GET ${url}${urlPath}: too large: it passed the cap of 1 MiB (--max-model-bytes)`,
      );
    });

    it('downloads a body of exactly the cap', async () => {
      const { url } = await serve((_req, res) => res.writeHead(200).end(Buffer.alloc(1000, 1)));
      await limited({ maxModelBytes: 1000 }).download(`${url}/m.bin`, target, never);
      expect((await readFile(path.join(target, 'm.bin'))).length).toBe(1000);
    });
  });

  describe('--min-download-rate', () => {
    it('fails retryably with a timeout when the body trickles below the rate', async () => {
      // 1,000 bytes/s against a minimum of 10 KiB/s over 300 ms: one window and the download is dropped.
      // 500 s of trickle: only the rate check ends it within the test.
      const { url } = await serve(trickle(Buffer.alloc(50, 1), 50, 10_000));
      const error = await effectError(
        limited({
          minRate: { ...cliDownloadLimits.minRate, bytesPerSecond: 10 * 1024, windowMs: 300 },
        }).download(`${url}/m.bin`, target, never),
      );
      expect(error).toMatchObject({ kind: 'timeout', retryable: true });
      expect(error.message).toMatch(
        new RegExp(
          `^GET ${url}/m.bin too slow: \\d+ bytes in the last 300 ms, below 10 KiB/s \\(--min-download-rate\\)$`,
        ),
      );
    });

    it('ends a request whose error answer trickles below the rate, its status said, the trickle dropped', async () => {
      // 10 bytes every 20 ms of an error page: 64 KiB of it would take 2 minutes, against 10 KiB/s over 300 ms.
      let closed: Promise<void> = Promise.resolve();
      const { url } = await serve((_req, res) => {
        res.writeHead(403, { 'content-type': 'text/html' });
        const timer = setInterval(() => res.write('no access '), 20);
        closed = new Promise((resolve) => res.on('close', resolve));
        void closed.then(() => clearInterval(timer));
      });
      const error = await effectError(
        limited({
          minRate: { ...cliDownloadLimits.minRate, bytesPerSecond: 10 * 1024, windowMs: 300 },
        }).download(`${url}/m.bin`, target, never),
      );
      expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
      await closed;
    });

    it('keeps a slow download that stays above the rate, however long it takes', async () => {
      // 2 KiB every 20 ms (~100 KiB/s) for 600 ms, two windows and more, against 10 KiB/s over 250 ms.
      const { url } = await serve(trickle(Buffer.alloc(2048, 1), 20, 30));
      await limited({
        minRate: { ...cliDownloadLimits.minRate, bytesPerSecond: 10 * 1024, windowMs: 250 },
      }).download(`${url}/m.bin`, target, never);
      expect((await readFile(path.join(target, 'm.bin'))).length).toBe(30 * 2048);
    });
  });

  describe('bodies cut short', () => {
    const tar = tarball([
      { name: 'a.bin', content: 'a'.repeat(600) },
      { name: 'b.bin', content: 'b'.repeat(10) },
    ]);

    // undici already fails these: a body shorter than its Content-Length, chunked without its terminator.
    it.each([
      ['shorter than its Content-Length', rawReply('HTTP/1.1 200 OK\nContent-Length: 5000', tar)],
      [
        'chunked without the terminating chunk',
        rawReply(
          'HTTP/1.1 200 OK\nTransfer-Encoding: chunked',
          `${tar.length.toString(16)}\r\n${tar.toString('latin1')}\r\n`,
        ),
      ],
    ])('fails retryably on a body %s', async (_label, handler) => {
      const { url } = await serve(handler);
      const error = await effectError(httpStorage().download(`${url}/m.tar`, target, never));
      expect(error).toMatchObject({ kind: 'network', retryable: true });
    });

    // Without a Content-Length the end of the connection is the end of the body: the archive must say it is whole.
    it.each([
      ['a tar cut at a 512-byte boundary', '/m.tar', tar.subarray(0, 1536)],
      ['a tar cut after its first end block', '/m.tar', tar.subarray(0, tar.length - 512)],
      ['a tar cut inside an entry', '/m.tar', tar.subarray(0, 700)],
      ['a tar cut inside its first header', '/m.tar', tar.subarray(0, 100)],
      ['an empty body for a tar', '/m.tar', Buffer.alloc(0)],
      [
        'a tar.gz cut mid-stream',
        '/m.tar.gz',
        tgz([{ name: 'a', content: 'x'.repeat(5000) }]).subarray(0, 40),
      ],
      ['a tar.gz without its gzip trailer', '/m.tar.gz', tgz([{ name: 'a', content: 'a' }]).subarray(0, -8)],
      [
        'a zip without its central directory',
        '/m.zip',
        zipArchive([{ name: 'a', content: 'a'.repeat(100) }]).subarray(0, 140),
      ],
    ])(
      'fails retryably, as a truncated archive, on %s in a close-delimited body',
      async (_label, urlPath, bytes) => {
        const { url } = await serve(rawReply('HTTP/1.1 200 OK\nConnection: close', bytes));
        const error = await effectError(httpStorage().download(`${url}${urlPath}`, target, never));
        expect(error).toMatchObject({ kind: 'invalid-archive', retryable: true });
        expect(error.message).toContain(`GET ${url}${urlPath}: truncated archive: `);
      },
    );

    it('saves a plain file in a close-delimited body as it came: its end cannot be told from a cut', async () => {
      const { url } = await serve(rawReply('HTTP/1.0 200 OK', 'half of the wei'));
      await httpStorage().download(`${url}/m.bin`, target, never);
      expect(await readFile(path.join(target, 'm.bin'), 'utf8')).toBe('half of the wei');
    });

    it('still fails for good on a close-delimited body that is no archive at all', async () => {
      const { url } = await serve(rawReply('HTTP/1.0 200 OK', '<html>'.repeat(200)));
      for (const file of ['m.tar', 'm.zip']) {
        const error = await effectError(httpStorage().download(`${url}/${file}`, target, never));
        expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      }
    });
  });
});
