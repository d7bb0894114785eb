/** Tests of httpStorage against real servers on 127.0.0.1: files, archives by type or name, redirects, failures by kind. */
import { mkdir, readFile, readdir, stat } from 'node:fs/promises';
import type { OutgoingHttpHeaders } from 'node:http';
import path from 'node:path';
import { bodyKind, httpStorage } from '../../../src/storage/http/http-storage';
import { writeRepeated, type HttpHandler } from '../../../src/testing/http-server';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';
import { tarball, tarHeader, tgz, zipArchive, zipLink, type TarEntry } from '../archive/builders';

/** Answers each path with its handler, and 404 where there is none. */
const routing =
  (routes: Readonly<Record<string, HttpHandler>>): HttpHandler =>
  (req, res) => {
    const handler = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (handler !== undefined) return handler(req, res);
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  };

const send =
  (body: Buffer | string, headers: OutgoingHttpHeaders = {}): HttpHandler =>
  (_req, res) => {
    res.writeHead(200, { 'content-length': Buffer.byteLength(body), ...headers }).end(body);
  };

/** Promises 100,000 bytes, sends half of them and drops the connection. */
const cutHalfway: HttpHandler = (_req, res) => {
  res.writeHead(200, { 'content-length': 100_000 });
  res.write(Buffer.alloc(50_000, 1), () => res.socket?.destroy());
};

const never = new AbortController().signal;

describe('bodyKind', () => {
  it.each([
    ['application/zip', '/model', 'zip'],
    ['application/x-tar', '/model.zip', 'tar'],
    ['application/x-gtar', '/m', 'tar'],
    ['application/gzip', '/m.bin', 'tar'],
    ['application/x-gzip; charset=binary', '/m', 'tar'],
    ['text/plain; charset=utf-8', '/test.tar', 'file'],
    ['text/plain', '/test.zip', 'file'],
    ['application/octet-stream', '/m.tar.gz', 'tar'],
    ['application/octet-stream', '/m.TGZ', 'tar'],
    ['application/octet-stream', '/m.tar', 'tar'],
    ['application/octet-stream', '/m.zip', 'zip'],
    [null, '/m.zip', 'zip'],
    ['application/octet-stream', '/model.joblib', 'file'],
    ['application/json', '/config.json', 'file'],
    [null, '/', 'file'],
  ])('stores a %s body from %s as %s', (contentType, urlPath, kind) => {
    expect(bodyKind(contentType, urlPath)).toBe(kind);
  });
});

describe('httpStorage', () => {
  const startServer = useHttpServers();
  const tmp = useTempDir('http');
  let target: string;

  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  /** Serves `routes` and returns the server's base URL. */
  const serve = async (routes: Readonly<Record<string, HttpHandler>>): Promise<string> =>
    (await startServer(routing(routes))).url;

  it('serves the http and https schemes', () => {
    expect(httpStorage().schemes).toEqual(['http', 'https']);
  });

  it('saves a plain file as targetDir/<last path segment> (W11)', async () => {
    const url = await serve({
      '/model.joblib': send('Temporary content\n', { 'content-type': 'text/plain; charset=utf-8' }),
    });
    const written = await httpStorage().download(`${url}/model.joblib`, target, never);
    expect(await listTree(target)).toEqual(['model.joblib']);
    expect(await readFile(path.join(target, 'model.joblib'), 'utf8')).toBe('Temporary content\n');
    // Told to the commit, so it need not list the dir again.
    expect(written).toEqual(new Map([['model.joblib', 18]]));
  });

  // A URL ending in a slash names no file: the body (often a server's index page) was saved as `model` and the
  // download succeeded, where KServe's initializer refuses the URI ("No filename contained in URI") and its agent
  // fails to create the file: the model server then met an HTML page as its model.
  it('fails for good, saving nothing, when the URL path ends in a slash and the body is no archive', async () => {
    const url = await serve({ '/models/': send('<html>index</html>', { 'content-type': 'text/html' }) });
    const error = await effectError(httpStorage().download(`${url}/models/?x=1`, target, never));
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).toBe(
      `GET ${url}/models/: the URL names no file (its path ends in "/"); name the file, or serve an archive`,
    );
    expect(await listTree(target)).toEqual([]);
  });

  it("extracts an archive its Content-Type names when the URL path ends in a slash, as KServe's agent does", async () => {
    const url = await serve({
      '/models/': send(tgz([{ name: 'model.pt', content: 'weights' }]), {
        'content-type': 'application/gzip',
      }),
    });
    await httpStorage().download(`${url}/models/`, target, never);
    expect(await listTree(target)).toEqual(['model.pt']);
  });

  it('fails permanently on 404 (W12)', async () => {
    const url = await serve({});
    const error = await effectError(httpStorage().download(`${url}/model.joblib`, target, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 404, retryable: false });
    expect(error.message).toBe(`GET ${url}/model.joblib returned HTTP 404: not found`);
    expect(await listTree(target)).toEqual([]);
  });

  // undici reads a head of up to 16 KiB (UND_ERR_HEADERS_OVERFLOW past it): the same server answers the same head
  // again, so the 8 tries (~25 s in the initializer) it was given as a `network` failure could never succeed.
  it('fails for good, saying why, on an answer whose head is over the limit', async () => {
    const headers = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-h${i}`, 'a'.repeat(1000)]));
    const url = await serve({ '/m.bin': send('x', headers) });
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
    expect(error.message).toBe(
      `GET ${url}/m.bin failed: the answer's head (its status line and headers) is over the 16 KiB a client reads`,
    );
    expect(await listTree(target)).toEqual([]);
  });

  it('fails permanently on 403', async () => {
    const url = await serve({ '/m': (_req, res) => res.writeHead(403).end() });
    const error = await effectError(httpStorage().download(`${url}/m`, target, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
  });

  // A GET without Range answered 206 (a broken cache) carries part of the file, a 204 none of it: saved, they
  // installed a truncated or empty model as a success. KServe's initializer and agent take only a 200.
  it.each([
    [204, {}, ''],
    [206, { 'content-range': 'bytes 0-3/10', etag: '"v1"' }, 'abcd'],
    [202, { 'content-type': 'application/json' }, '{"status":"preparing"}'],
  ])(
    'fails permanently when the first answer is %i, not 200, writing nothing',
    async (status, headers, body) => {
      const url = await serve({
        '/model.bin': (_req, res) => res.writeHead(status, headers).end(body),
      });
      const error = await effectError(httpStorage().download(`${url}/model.bin`, target, never));
      expect(error).toMatchObject({ kind: 'http-status', status, retryable: false });
      expect(error.message).toMatch(new RegExp(`^GET ${url}/model.bin returned HTTP ${status}`));
      expect(await listTree(target)).toEqual([]);
    },
  );

  it.each([503, 429])('fails retryably on %i, with the server text', async (status) => {
    const url = await serve({ '/m': (_req, res) => res.writeHead(status).end('busy') });
    const error = await effectError(httpStorage().download(`${url}/m`, target, never));
    expect(error).toMatchObject({ kind: 'http-status', status, retryable: true });
    expect(error.message).toBe(`GET ${url}/m returned HTTP ${status}: busy`);
  });

  it('saves text/plain answers for .tar and .zip URLs as files (W13)', async () => {
    const tarHex = tarball([{ name: 'a.txt', content: 'a' }]).toString('hex');
    const url = await serve({
      '/test.tar': send(tarHex, { 'content-type': 'text/plain; charset=utf-8' }),
      '/test.zip': send('504b0304', { 'content-type': 'text/plain; charset=utf-8' }),
    });
    await httpStorage().download(`${url}/test.tar`, target, never);
    await httpStorage().download(`${url}/test.zip`, target, never);
    expect(await listTree(target)).toEqual(['test.tar', 'test.zip']);
    expect(await readFile(path.join(target, 'test.tar'), 'utf8')).toBe(tarHex);
  });

  const nestedTar: TarEntry[] = [
    { name: 'model/', type: '5' },
    { name: 'model/1/model.pt', content: 'weights' },
    { name: 'model/latest', type: '2', linkname: '1/model.pt' },
  ];
  const nestedTree = ['model/', 'model/1/', 'model/1/model.pt', 'model/latest -> 1/model.pt'];

  it('extracts a plain tar, even when served as application/gzip', async () => {
    const url = await serve({ '/model': send(tarball(nestedTar), { 'content-type': 'application/gzip' }) });
    // An archive's entries are not told: the commit lists what the extractor wrote.
    expect(await httpStorage().download(`${url}/model`, target, never)).toBeUndefined();
    expect(await listTree(target)).toEqual(nestedTree);
    expect(await readFile(path.join(target, 'model', 'latest'), 'utf8')).toBe('weights');
  });

  it('extracts a tar.gz chosen by its extension', async () => {
    const url = await serve({
      '/m.tar.gz': send(tgz(nestedTar), { 'content-type': 'application/octet-stream' }),
    });
    await httpStorage().download(`${url}/m.tar.gz`, target, never);
    expect(await listTree(target)).toEqual(nestedTree);
  });

  it('extracts a zip chosen by its Content-Type, leaving no temporary file', async () => {
    const zip = zipArchive([
      { name: 'model/1/model.pt', content: 'weights' },
      zipLink('model/latest', '1/model.pt'),
    ]);
    const url = await serve({ '/model': send(zip, { 'content-type': 'application/zip' }) });
    await httpStorage().download(`${url}/model`, target, never);
    expect(await listTree(target)).toEqual(nestedTree);
    expect(await readdir(tmp.path)).toEqual(['target']);
  });

  it.each([
    ['tar', '/m.tar', tarball([{ name: '../evil', content: 'x' }]), `"../evil": its path contains '..'`],
    [
      'zip',
      '/m.zip',
      zipArchive([zipLink('leak', '../../etc/passwd')]),
      '"leak": it links to ../../etc/passwd, outside the model dir',
    ],
  ])('fails permanently on a %s entry that would escape, naming it', async (_format, urlPath, bytes, why) => {
    const url = await serve({ [urlPath]: send(bytes) });
    const error = await effectError(httpStorage().download(`${url}${urlPath}`, target, never));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toBe(`GET ${url}${urlPath}: refusing archive entry ${why}`);
    expect(await readdir(tmp.path)).toEqual(['target']);
  });

  it('fails permanently when an archive is corrupt', async () => {
    const url = await serve({
      '/m.zip': send(Buffer.from('this is not a zip file at all, not even close to one')),
      '/m.tar.gz': send(Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.from('garbage garbage garbage')])),
    });
    for (const file of ['m.zip', 'm.tar.gz']) {
      const error = await effectError(httpStorage().download(`${url}/${file}`, target, never));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(error.message).toContain(`GET ${url}/${file}: invalid archive: `);
    }
    expect(await readdir(tmp.path)).toEqual(['target']);
  });

  it('sends the headers configured for the host', async () => {
    const seen: Array<string | undefined> = [];
    const url = await serve({
      '/m.bin': (req, res) => {
        seen.push(req.headers['x-api-key'] as string | undefined);
        if (req.headers['x-api-key'] !== 'secret') res.writeHead(401).end();
        else send('ok')(req, res);
      },
    });
    const headersByHost = new Map([['127.0.0.1', { 'X-Api-Key': 'secret' }]]);
    await httpStorage({ headersByHost }).download(`${url}/m.bin`, target, never);
    expect(seen).toEqual(['secret']);
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
  });

  it("sends a URI's user:password as Basic authorization, percent-decoded, as KServe's initializer and agent do", async () => {
    const seen: Array<string | undefined> = [];
    const url = await serve({
      '/m.bin': (req, res) => {
        seen.push(req.headers.authorization);
        if (req.headers.authorization === undefined) res.writeHead(401).end();
        else send('ok')(req, res);
      },
    });
    const withUser = url.replace('http://', 'http://ci%40corp:p%3Ass%2Fw@');
    // The host's own Authorization header gives way to the URI's, as requests lets the URL's auth win.
    const headersByHost = new Map([['127.0.0.1', { Authorization: 'Bearer other', 'X-Api-Key': 'k' }]]);
    await httpStorage({ headersByHost }).download(`${withUser}/m.bin`, target, never);
    expect(seen).toEqual([`Basic ${Buffer.from('ci@corp:p:ss/w').toString('base64')}`]);
    expect(await readFile(path.join(target, 'm.bin'), 'utf8')).toBe('ok');
  });

  it("sends a URI's user:password to its own server alone: never to a redirect target, and says neither", async () => {
    const elsewhere: Array<string | undefined> = [];
    const other = await startServer((req, res) => {
      elsewhere.push(req.headers.authorization);
      res.writeHead(403).end(`denied ${req.headers.authorization ?? ''}`);
    });
    const url = await serve({
      '/m.bin': (_req, res) => res.writeHead(302, { location: `${other.url}/blob` }).end(),
    });
    const withUser = url.replace('http://', 'http://alice:hunter2-secret@');
    const error = await effectError(httpStorage().download(`${withUser}/m.bin`, target, never));
    expect(elsewhere).toEqual([undefined]);
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).not.toContain('hunter2-secret');
    expect(error.message).not.toContain('alice');
  });

  it('follows redirects and names the file after the requested URL', async () => {
    const url = await serve({
      '/model.joblib': (_req, res) => res.writeHead(302, { location: '/blobs/abc123?sig=x' }).end(),
      '/blobs/abc123': send('content'),
    });
    await httpStorage().download(`${url}/model.joblib`, target, never);
    expect(await listTree(target)).toEqual(['model.joblib']);
  });

  it('follows a redirect whose page trickles without waiting for it', async () => {
    let closed: Promise<void> = Promise.resolve();
    const url = await serve({
      // A redirect page that comes 10 bytes every 20 ms and never ends: 64 KiB of it would take 2 minutes.
      '/model.joblib': (_req, res) => {
        res.writeHead(302, { location: '/blobs/abc123', 'content-type': 'text/html' });
        const timer = setInterval(() => res.write('moved ... '), 20);
        closed = new Promise((resolve) => res.on('close', resolve));
        void closed.then(() => clearInterval(timer));
      },
      '/blobs/abc123': send('content'),
    });
    await httpStorage().download(`${url}/model.joblib`, target, never);
    expect(await listTree(target)).toEqual(['model.joblib']);
    await closed;
  });

  it('keeps the query of a redirect target out of its messages', async () => {
    const url = await serve({
      '/model.joblib': (_req, res) => res.writeHead(302, { location: '/blobs/abc123?sig=secret' }).end(),
      '/blobs/abc123': (_req, res) => res.writeHead(403).end(),
    });
    const error = await effectError(httpStorage().download(`${url}/model.joblib`, target, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).toBe(`GET ${url}/model.joblib returned HTTP 403`);
  });

  it('fails permanently on a redirect to another protocol', async () => {
    const url = await serve({
      '/m': (_req, res) => res.writeHead(302, { location: 'ftp://user:secret@host/m?sig=secret' }).end(),
    });
    const error = await effectError(httpStorage().download(`${url}/m`, target, never));
    expect(error).toMatchObject({ kind: 'unsupported-scheme', retryable: false });
    expect(error.message).not.toContain('secret');
  });

  it.each([['a bad URL with a query', 'http://[bad/m?sig=secret', 'invalid-uri', 'GET http://[bad/m']])(
    'fails permanently on a URL with %s, without repeating its secret',
    async (_l, uri, kind, shown) => {
      const error = await effectError(httpStorage().download(uri, target, never));
      expect(error).toMatchObject({ kind, retryable: false });
      expect(error.message).toContain(shown);
      expect(error.message).not.toContain('secret');
    },
  );

  it('keeps the query of the URL out of every message, failures of the server included', async () => {
    const url = await serve({ '/m.bin': (_req, res) => res.writeHead(500).end('down') });
    const error = await effectError(httpStorage().download(`${url}/m.bin?token=secret#frag`, target, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 500, retryable: true });
    expect(error.message).toBe(`GET ${url}/m.bin returned HTTP 500: down`);
  });

  it("says a server's error without the query values it was sent, when it quotes them back outside a URL", async () => {
    // A storage server's 404 page quoting the path it was asked, query and all; and a presigned target's.
    const echo: HttpHandler = (req, res) => res.writeHead(404).end(`not found: ${req.url ?? ''}`);
    const url = await serve({
      '/my%20models/m.bin': echo,
      '/m2.bin': (_req, res) =>
        res.writeHead(302, { location: '/blob?X-Custom-Sig=presigned-value-77' }).end(),
      '/blob': echo,
    });
    const quoted = await effectError(
      httpStorage().download(`${url}/my models/m.bin?X-Custom-Token=c0ffee-t0ken&v=2`, target, never),
    );
    expect(quoted).toMatchObject({ kind: 'http-status', status: 404 });
    expect(quoted.message).toBe(
      `GET ${url}/my models/m.bin returned HTTP 404: not found: /my%20models/m.bin?X-Custom-Token=[REDACTED]&v=2`,
    );
    const redirected = await effectError(httpStorage().download(`${url}/m2.bin`, target, never));
    expect(redirected.message).toBe(
      `GET ${url}/m2.bin returned HTTP 404: not found: /blob?X-Custom-Sig=[REDACTED]`,
    );
  });

  it('fails with a permanent filesystem error when the file cannot be created', async () => {
    const url = await serve({ '/m.bin': send('weights') });
    await httpStorage().download(`${url}/m.bin`, target, never);
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'filesystem', retryable: false });
    expect(error.message).toContain('EEXIST');
  });

  it('fails retryably, keeping no partial archive, when the response is cut mid-stream', async () => {
    const url = await serve({ '/m.bin': cutHalfway });
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toContain(`GET ${url}/m.bin: connection lost: `);
  });

  it('fails retryably when a zip download is cut, leaving no temp file', async () => {
    const url = await serve({ '/m.zip': cutHalfway });
    const error = await effectError(httpStorage().download(`${url}/m.zip`, target, never));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(await readdir(target)).toEqual([]);
  });

  it('fails retryably when no data arrives for idleTimeoutMs', async () => {
    const url = await serve({
      '/m.bin': (_req, res) => {
        res.writeHead(200, { 'content-length': 1000 });
        res.write('x'.repeat(10));
      },
    });
    const error = await effectError(
      httpStorage({ idleTimeoutMs: 200 }).download(`${url}/m.bin`, target, never),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toBe(`GET ${url}/m.bin timed out: no data received for 200 ms`);
  });

  it('fails retryably when the headers do not come within connectTimeoutMs', async () => {
    const url = await serve({ '/m.bin': () => undefined });
    const error = await effectError(
      httpStorage({ connectTimeoutMs: 200 }).download(`${url}/m.bin`, target, never),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toBe(`GET ${url}/m.bin timed out: no response within 200 ms`);
  });

  it('fails retryably when nothing listens', async () => {
    const server = await startServer(routing({}));
    await server.close();
    const url = server.url;
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toMatch(/^GET .* failed: connect ECONNREFUSED/);
  });

  it('rejects promptly when the signal aborts mid-download', async () => {
    const url = await serve({
      '/m.tar': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-tar' });
        res.write(tarHeader({ name: 'big.bin' }, 1_000_000));
      },
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    // The abort's own error: the answer would otherwise wait for its idle timeout.
    const error = await effectError(httpStorage().download(`${url}/m.tar`, target, controller.signal));
    expect(error).toMatchObject({ kind: 'aborted', retryable: true, message: `GET ${url}/m.tar aborted` });
  });

  it('streams a 200 MiB download to disk without holding it in memory', async () => {
    const size = 200 * 1024 * 1024;
    const block = Buffer.alloc(1024 * 1024, 7);
    const url = await serve({
      '/small.bin': send(block),
      '/big.bin': (_req, res) => {
        res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' });
        writeRepeated(res, block, size);
      },
    });
    // Warm up first, so fetch's one-time set-up does not count as growth.
    await httpStorage().download(`${url}/small.bin`, target, never);
    const before = process.memoryUsage().rss;
    await httpStorage().download(`${url}/big.bin`, target, never);
    const growth = process.memoryUsage().rss - before;
    expect((await stat(path.join(target, 'big.bin'))).size).toBe(size);
    expect(growth).toBeLessThan(100 * 1024 * 1024);
  });
});
