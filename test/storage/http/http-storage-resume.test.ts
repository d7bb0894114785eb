/** Tests of httpStorage's resume: a body cut mid-stream continues with Range/If-Range, or starts again when it changed. */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { httpStorage } from '../../../src/storage/http/http-storage';
import {
  patternBlock,
  rangedBody,
  repeatedSlice,
  type RangedBodyOptions,
} from '../../../src/testing/ranged-body';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';
import { tgz } from '../archive/builders';

const never = new AbortController().signal;
const offsetOf = (range: string | undefined): number => Number(/^bytes=(\d+)-$/.exec(range ?? '')?.[1]);
const size = 300_000;

describe('httpStorage resume', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('http-resume');
  let target: string;

  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  const start = async (options: Partial<RangedBodyOptions> = {}) => {
    const body = rangedBody({ size, ...options });
    const { url } = await serve(body.handle);
    return { body, url: `${url}/m.bin` };
  };

  const saved = (): Promise<Buffer> => readFile(path.join(target, 'm.bin'));
  const whole = (): Buffer => repeatedSlice(patternBlock, 0, size);

  it('resumes a body cut mid-stream from the bytes it has, with Range and If-Range on the ETag', async () => {
    const { body, url } = await start();
    body.cutAt(120_000);
    await httpStorage().download(url, target, never);
    expect((await saved()).equals(whole())).toBe(true);
    // The resume starts from what reached the consumer: bytes buffered when the connection broke are dropped.
    const [first, second] = body.requests;
    expect(first).toEqual({ method: 'GET', range: undefined, ifRange: undefined, status: 200 });
    expect(second).toMatchObject({ ifRange: '"v1"', status: 206 });
    expect(offsetOf(second?.range)).toBeLessThanOrEqual(120_000);
    expect(body.requests).toHaveLength(2);
  });

  it.each([
    ['503 with no Retry-After', 503, undefined],
    ['429 with Retry-After 1', 429, '1'],
  ] as const)(
    'waits out a push-back (%s) to a resume and asks again, keeping the bytes it has',
    async (_name, status, retryAfter) => {
      const { body, url } = await start();
      body.cutAt(120_000);
      let pushedBack = false;
      const server = await serve((req, res) => {
        // The first resume pushed back, as a store out of connections answers it.
        if (req.headers.range !== undefined && !pushedBack) {
          pushedBack = true;
          res.writeHead(status, retryAfter === undefined ? {} : { 'retry-after': retryAfter }).end('busy');
          return;
        }
        body.handle(req, res);
      });
      void url;
      await httpStorage({ retry: { maxAttempts: 8, baseMs: 20, maxMs: 2000 } }).download(
        `${server.url}/m.bin`,
        target,
        never,
      );
      expect(pushedBack).toBe(true);
      expect((await saved()).equals(whole())).toBe(true);
      // Asked again from the bytes it had, not from 0.
      expect(body.requests.map((r) => r.status)).toEqual([200, 206]);
    },
  );

  it('resumes again and again while each resume brings bytes', async () => {
    const { body, url } = await start();
    body.cutAt(50_000, 100_000, 150_000, 200_000);
    await httpStorage().download(url, target, never);
    expect((await saved()).equals(whole())).toBe(true);
    expect(body.requests.map((r) => r.status)).toEqual([200, 206, 206, 206, 206]);
    const offsets = body.requests.slice(1).map((r) => offsetOf(r.range));
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
  });

  it('uses Last-Modified for If-Range when the ETag is weak', async () => {
    const lastModified = 'Tue, 01 Dec 2020 10:00:00 GMT';
    const { body, url } = await start({ etag: 'W/"weak"', lastModified });
    body.cutAt(10_000);
    await httpStorage().download(url, target, never);
    expect((await saved()).equals(whole())).toBe(true);
    expect(body.requests[1]).toMatchObject({ ifRange: lastModified, status: 206 });
  });

  it('fails retryably as changed, to start again from 0, when the file changed before the resume', async () => {
    const { body, url } = await start();
    body.cutAt(120_000);
    const server = await serve((req, res) => {
      if (body.requests.length === 1) body.change('"v2"');
      body.handle(req, res);
    });
    const url2 = `${server.url}/m.bin`;
    void url;
    const error = await effectError(httpStorage().download(url2, target, never));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(error.message).toMatch(
      new RegExp(
        `^GET ${url2}: resume 1 from byte \\d+ was answered 200: the file changed on the server or it does ` +
          'not serve ranges; the download starts again$',
      ),
    );
  });

  it.each([
    ['with a Content-Length', true],
    ['chunked', false],
  ] as const)(
    'fails retryably as changed when a resume is answered with fewer bytes than the rest (%s), never saving a cut file',
    async (_name, framed) => {
      const server = await serve((req, res) => {
        const asked = req.headers.range;
        if (asked === undefined) {
          // The first answer cut at 120,000 bytes.
          const headers = { etag: '"v1"', 'accept-ranges': 'bytes' };
          res.writeHead(200, framed ? { ...headers, 'content-length': String(size) } : headers);
          res.write(whole().subarray(0, 120_000), () => res.destroy());
          return;
        }
        // The resume answered with 1,000 bytes of the rest only, as a server capping its ranges may.
        const from = offsetOf(asked);
        res.writeHead(206, {
          etag: '"v1"',
          'content-range': `bytes ${from}-${from + 999}/${size}`,
          'content-length': '1000',
        });
        res.end(whole().subarray(from, from + 1000));
      });
      const error = await effectError(httpStorage().download(`${server.url}/m.bin`, target, never));
      expect(error).toMatchObject({ kind: 'changed', retryable: true });
      expect(error.message).toContain('the download starts again');
    },
  );

  // A server that ignores If-Range serves any range asked of a file replaced after the first answer. Last-Modified
  // is the validator (no ETag, or a weak one): another date, or under the same date another weak ETag, says the bytes
  // are not the first's.
  it.each([
    ['another Last-Modified', { etag: null }, { etag: null, lastModified: 'Wed, 02 Dec 2020 10:00:00 GMT' }],
    ['the same Last-Modified and another weak ETag', { etag: 'W/"v1"' }, { etag: 'W/"v2"' }],
  ] as const)(
    'fails retryably as changed when a server that ignores If-Range resumes with %s',
    async (_case, first, replaced) => {
      const lastModified = 'Tue, 01 Dec 2020 10:00:00 GMT';
      const { body } = await start({ ...first, lastModified });
      body.cutAt(120_000);
      const v2 = rangedBody({ size, lastModified, ...replaced });
      const server = await serve((req, res) => {
        if (req.headers.range === undefined) return body.handle(req, res);
        delete req.headers['if-range'];
        v2.handle(req, res);
      });
      const error = await effectError(httpStorage().download(`${server.url}/m.bin`, target, never));
      expect(error).toMatchObject({ kind: 'changed', retryable: true });
      expect(v2.requests).toHaveLength(1);
    },
  );

  it('fails retryably as changed when the server ignores ranges', async () => {
    const { body, url } = await start({ ranges: false });
    body.cutAt(120_000);
    const error = await effectError(httpStorage().download(url, target, never));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
  });

  it('does not resume a body without a validator: the cut fails the download, as before', async () => {
    const { body, url } = await start({ etag: null });
    body.cutAt(120_000);
    const error = await effectError(httpStorage().download(url, target, never));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(body.requests).toHaveLength(1);
  });

  // RFC 9110 §8.8.2.2: a client may take Last-Modified as a strong validator only when it is at least 60 s before
  // the answer's Date. A file written within that (and Last-Modified has a one-second resolution) may be replaced
  // again in the same second, with the same date: resuming on it could splice two versions into one file.
  it("does not resume on a Last-Modified less than 60 s before the answer's Date: it may not tell two versions apart", async () => {
    const { body, url } = await start({ etag: 'W/"weak"', lastModified: new Date().toUTCString() });
    body.cutAt(120_000);
    const error = await effectError(httpStorage().download(url, target, never));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(body.requests).toHaveLength(1);
  });

  it('gives up after maxResumes resumes in a row that bring little, with the connection error', async () => {
    const { body, url } = await start();
    body.cutAt(1_000, 2_000, 3_000, 4_000);
    const error = await effectError(httpStorage({ maxResumes: 2 }).download(url, target, never));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toContain('connection lost');
    expect(body.requests).toHaveLength(3);
  });

  it('resumes an archive mid-stream: the extractor sees one whole stream', async () => {
    // Bytes gzip cannot shrink much, so the archive is large enough to cut in the middle.
    const payload = Buffer.from(
      Array.from({ length: 400_000 }, (_, i) => 97 + (((i * 2654435761) >>> 24) % 26)),
    );
    const archive = tgz([{ name: 'weights.bin', content: payload.toString('latin1') }]);
    const body = rangedBody({ size: archive.length, block: archive });
    body.cutAt(Math.floor(archive.length / 2));
    const { url } = await serve(body.handle);
    await httpStorage().download(`${url}/m.tar.gz`, target, never);
    expect(await listTree(target)).toEqual(['weights.bin']);
    expect((await readFile(path.join(target, 'weights.bin'))).equals(payload)).toBe(true);
    expect(body.requests.map((r) => r.status)).toEqual([200, 206]);
  });

  it('stops waiting to resume when the caller aborts', async () => {
    const { body, url } = await start();
    body.cutAt(10_000);
    const controller = new AbortController();
    const pending = effectError(httpStorage().download(url, target, controller.signal));
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toMatchObject({ kind: 'aborted' });
  });
});
