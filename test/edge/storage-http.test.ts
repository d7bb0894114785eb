import { mkdir, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as yazl from 'yazl';
import { bodyKind, httpStorage } from '../../src/edge/storage-http';
import { effectError } from '../helpers/effect-error';
import { listTree } from '../helpers/list-tree';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface TestServer {
  readonly url: string;
  readonly close: () => Promise<void>;
}

const startServer = async (routes: Record<string, Handler>): Promise<TestServer> => {
  const server = http.createServer((req, res) => {
    const handler = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (handler === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

const send =
  (body: Buffer | string, headers: http.OutgoingHttpHeaders = {}): Handler =>
  (_req, res) => {
    res.writeHead(200, { 'content-length': Buffer.byteLength(body), ...headers }).end(body);
  };

/** A ustar archive built by hand, so tests can write entries that real tools refuse to make. */
interface TarEntry {
  readonly name: string;
  readonly content?: string;
  readonly type?: '0' | '1' | '2' | '5';
  readonly linkname?: string;
  readonly mode?: number;
}

const tarHeader = (entry: TarEntry, size: number): Buffer => {
  const header = Buffer.alloc(512);
  const octal = (value: number, width: number): string => `${value.toString(8).padStart(width - 1, '0')}\0`;
  header.write(entry.name, 0, 100, 'utf8');
  header.write(octal(entry.mode ?? (entry.type === '5' ? 0o755 : 0o644), 8), 100);
  header.write(octal(0, 8), 108);
  header.write(octal(0, 8), 116);
  header.write(octal(size, 12), 124);
  header.write(octal(1_700_000_000, 12), 136);
  header.write('        ', 148);
  header.write(entry.type ?? '0', 156);
  header.write(entry.linkname ?? '', 157, 100, 'utf8');
  header.write('ustar\0', 257);
  header.write('00', 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
};

const tarball = (entries: ReadonlyArray<TarEntry>): Buffer => {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    blocks.push(
      tarHeader(entry, content.length),
      content,
      Buffer.alloc((512 - (content.length % 512)) % 512),
    );
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
};

interface ZipEntry {
  readonly name: string;
  readonly content?: string;
  readonly mode?: number;
  readonly dir?: boolean;
}

const zipArchive = async (entries: ReadonlyArray<ZipEntry>): Promise<Buffer> => {
  const zip = new yazl.ZipFile();
  for (const entry of entries) {
    if (entry.dir === true) zip.addEmptyDirectory(entry.name);
    else
      zip.addBuffer(
        Buffer.from(entry.content ?? ''),
        entry.name,
        entry.mode === undefined ? {} : { mode: entry.mode },
      );
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

/** Renames an entry in place (same length), since yazl refuses to write the names these tests need. */
const renameInZip = (zip: Buffer, from: string, to: string): Buffer => {
  expect(to.length).toBe(from.length);
  const out = Buffer.from(zip);
  for (let at = out.indexOf(from); at !== -1; at = out.indexOf(from, at + 1)) out.write(to, at, 'latin1');
  return out;
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
  let root: string;
  let target: string;
  let server: TestServer | undefined;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'modelsync-http-'));
    target = path.join(root, 'target');
    await mkdir(target);
  });

  afterEach(async () => {
    await server?.close();
    server = undefined;
    await rm(root, { recursive: true, force: true });
  });

  const serve = async (routes: Record<string, Handler>): Promise<string> => {
    server = await startServer(routes);
    return server.url;
  };

  it('serves the http and https schemes', () => {
    expect(httpStorage().schemes).toEqual(['http', 'https']);
  });

  it('saves a plain file as targetDir/<last path segment> (W11)', async () => {
    const url = await serve({
      '/model.joblib': send('Temporary content\n', { 'content-type': 'text/plain; charset=utf-8' }),
    });
    await httpStorage().download(`${url}/model.joblib`, target, never);
    expect(await listTree(target)).toEqual(['model.joblib']);
    expect(await readFile(path.join(target, 'model.joblib'), 'utf8')).toBe('Temporary content\n');
  });

  it('names the file "model" when the URL path ends in a slash', async () => {
    const url = await serve({ '/models/': send('weights', { 'content-type': 'application/octet-stream' }) });
    await httpStorage().download(`${url}/models/`, target, never);
    expect(await listTree(target)).toEqual(['model']);
  });

  it('fails permanently on 404 (W12)', async () => {
    const url = await serve({});
    const error = await effectError(httpStorage().download(`${url}/model.joblib`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toBe(`GET ${url}/model.joblib returned HTTP 404: not found`);
    expect(await listTree(target)).toEqual([]);
  });

  it('fails permanently on 403', async () => {
    const url = await serve({ '/m': (_req, res) => res.writeHead(403).end() });
    const error = await effectError(httpStorage().download(`${url}/m`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('HTTP 403');
  });

  it.each([503, 429])('fails retryably on %i', async (status) => {
    const url = await serve({ '/m': (_req, res) => res.writeHead(status).end('busy') });
    const error = await effectError(httpStorage().download(`${url}/m`, target, never));
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`HTTP ${status}`);
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

  const nestedTar = (): Buffer =>
    tarball([
      { name: 'model/', type: '5' },
      { name: 'model/1/', type: '5' },
      { name: 'model/1/model.pt', content: 'weights' },
      { name: 'config/settings.json', content: '{"a":1}' },
      { name: 'model/latest', type: '2', linkname: '1/model.pt' },
      { name: 'model/copy.pt', type: '1', linkname: 'model/1/model.pt' },
    ]);
  const nestedTree = [
    'config/',
    'config/settings.json',
    'model/',
    'model/1/',
    'model/1/model.pt',
    'model/copy.pt',
    'model/latest -> 1/model.pt',
  ];

  it('extracts a plain tar with nested dirs, even when served as application/gzip', async () => {
    const url = await serve({ '/model': send(nestedTar(), { 'content-type': 'application/gzip' }) });
    await httpStorage().download(`${url}/model`, target, never);
    expect(await listTree(target)).toEqual(nestedTree);
    expect(await readFile(path.join(target, 'model', 'latest'), 'utf8')).toBe('weights');
    expect((await stat(path.join(target, 'model'))).mode & 0o777).toBe(0o755);
  });

  it('extracts a tar.gz chosen by its extension', async () => {
    const url = await serve({
      '/m.tar.gz': send(gzipSync(nestedTar()), { 'content-type': 'application/octet-stream' }),
    });
    await httpStorage().download(`${url}/m.tar.gz`, target, never);
    expect(await listTree(target)).toEqual(nestedTree);
    expect(await readFile(path.join(target, 'config', 'settings.json'), 'utf8')).toBe('{"a":1}');
  });

  it('extracts a zip with nested dirs and an inside symlink', async () => {
    const zip = await zipArchive([
      { name: 'model/', dir: true },
      { name: 'model/1/model.pt', content: 'weights' },
      { name: 'config.json', content: '{}' },
      { name: 'model/latest', content: '1/model.pt', mode: 0o120777 },
    ]);
    const url = await serve({ '/m.zip': send(zip) });
    await httpStorage().download(`${url}/m.zip`, target, never);
    expect(await listTree(target)).toEqual([
      'config.json',
      'model/',
      'model/1/',
      'model/1/model.pt',
      'model/latest -> 1/model.pt',
    ]);
    expect(await readFile(path.join(target, 'model', 'latest'), 'utf8')).toBe('weights');
    expect((await stat(path.join(target, 'model', '1'))).mode & 0o777).toBe(0o755);
    expect(await readdir(root)).toEqual(['target']);
  });

  it.each([
    ['../evil', [{ name: '../evil', content: 'x' }], "contains '..'"],
    ['a/../../evil', [{ name: 'a/../../evil', content: 'x' }], "contains '..'"],
    ['/tmp/evil', [{ name: '/tmp/evil', content: 'x' }], 'absolute'],
    ['link', [{ name: 'link', type: '2' as const, linkname: '../outside' }], 'outside the model dir'],
    [
      'abs-link',
      [{ name: 'abs-link', type: '2' as const, linkname: '/etc/passwd' }],
      'absolute path /etc/passwd',
    ],
    ['hard', [{ name: 'hard', type: '1' as const, linkname: '../outside' }], "contains '..'"],
    [
      'l/x',
      [
        { name: 'l', type: '2' as const, linkname: '.' },
        { name: 'l/x', content: 'x' },
      ],
      'through the symlink l',
    ],
  ])('fails permanently on the tar entry %s', async (entryName, entries, why) => {
    const url = await serve({ '/m.tar': send(tarball(entries), { 'content-type': 'application/x-tar' }) });
    const error = await effectError(httpStorage().download(`${url}/m.tar`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(`refusing archive entry ${JSON.stringify(entryName)}`);
    expect(error.message).toContain(why);
    expect(await readdir(root)).toEqual(['target']);
  });

  it('fails permanently when tar symlinks combine into a way out', async () => {
    const entries: TarEntry[] = [
      { name: 'a', type: '2', linkname: '.' },
      { name: 'b', type: '2', linkname: 'a/..' },
    ];
    const url = await serve({ '/m.tar': send(tarball(entries)) });
    const error = await effectError(httpStorage().download(`${url}/m.tar`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('refusing archive entry "b": it leads outside the model dir');
  });

  it.each([
    ['../evil', 'xx/evil', `"../evil": its path contains '..'`],
    ['/tmp/evil', 'xtmp/evil', '"/tmp/evil": its path is absolute'],
    // Backslashes are separators in zips made on Windows; yauzl turns them into slashes.
    ['a\\..\\evil', 'a/xx/evil', `"a/../evil": its path contains '..'`],
  ])('fails permanently on the zip entry %s', async (name, placeholder, why) => {
    const zip = renameInZip(await zipArchive([{ name: placeholder, content: 'x' }]), placeholder, name);
    const url = await serve({ '/m.zip': send(zip, { 'content-type': 'application/zip' }) });
    const error = await effectError(httpStorage().download(`${url}/m.zip`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(`refusing archive entry ${why}`);
    expect(await readdir(root)).toEqual(['target']);
    expect(await listTree(target)).toEqual([]);
  });

  it('fails permanently on a zip symlink pointing outside', async () => {
    const zip = await zipArchive([
      { name: 'ok.txt', content: 'x' },
      { name: 'leak', content: '../../etc/passwd', mode: 0o120777 },
    ]);
    const url = await serve({ '/m.zip': send(zip) });
    const error = await effectError(httpStorage().download(`${url}/m.zip`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('refusing archive entry "leak": it links to ../../etc/passwd');
  });

  it('fails permanently when an archive is corrupt', async () => {
    const url = await serve({
      '/m.zip': send(Buffer.from('this is not a zip file at all, not even close to one')),
      '/m.tar.gz': send(Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.from('garbage garbage garbage')])),
    });
    for (const file of ['m.zip', 'm.tar.gz']) {
      const error = await effectError(httpStorage().download(`${url}/${file}`, target, never));
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('invalid archive');
    }
    expect(await readdir(root)).toEqual(['target']);
  });

  it('fails permanently when a zip holds the same file twice', async () => {
    const zip = await zipArchive([
      { name: 'model.pt', content: 'first' },
      { name: 'model.pt', content: 'second' },
    ]);
    const url = await serve({ '/m.zip': send(zip) });
    const error = await effectError(httpStorage().download(`${url}/m.zip`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('invalid archive');
  });

  it('fails permanently when a tar hard-links an entry it does not hold', async () => {
    const url = await serve({ '/m.tar': send(tarball([{ name: 'h', type: '1', linkname: 'missing' }])) });
    const error = await effectError(httpStorage().download(`${url}/m.tar`, target, never));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('invalid archive');
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
    expect(error.message).toContain('HTTP 401');
  });

  it('follows redirects and names the file after the requested URL', async () => {
    const url = await serve({
      '/model.joblib': (_req, res) => res.writeHead(302, { location: '/blobs/abc123?sig=x' }).end(),
      '/blobs/abc123': send('content'),
    });
    await httpStorage().download(`${url}/model.joblib`, target, never);
    expect(await listTree(target)).toEqual(['model.joblib']);
  });

  it('fails retryably, keeping no partial archive, when the response is cut mid-stream', async () => {
    const url = await serve({
      '/m.bin': (_req, res) => {
        res.writeHead(200, { 'content-length': 100_000 });
        res.write(Buffer.alloc(50_000, 1), () => res.socket?.destroy());
      },
    });
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('connection lost');
  });

  it('fails retryably when a zip download is cut, leaving no temp file', async () => {
    const url = await serve({
      '/m.zip': (_req, res) => {
        res.writeHead(200, { 'content-length': 100_000 });
        res.write(Buffer.alloc(50_000, 1), () => res.socket?.destroy());
      },
    });
    const error = await effectError(httpStorage().download(`${url}/m.zip`, target, never));
    expect(error.retryable).toBe(true);
    expect(await readdir(target)).toEqual([]);
  });

  it('fails retryably when no data arrives for idleTimeoutMs', async () => {
    const url = await serve({
      '/m.bin': (_req, res) => {
        res.writeHead(200, { 'content-length': 1000 });
        res.write('x'.repeat(10));
      },
    });
    const started = Date.now();
    const error = await effectError(
      httpStorage({ idleTimeoutMs: 200 }).download(`${url}/m.bin`, target, never),
    );
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('no data received for 200 ms');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('fails retryably when the headers do not come within connectTimeoutMs', async () => {
    const url = await serve({ '/m.bin': () => undefined });
    const error = await effectError(
      httpStorage({ connectTimeoutMs: 200 }).download(`${url}/m.bin`, target, never),
    );
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('no response within 200 ms');
  });

  it('fails retryably when nothing listens', async () => {
    const url = await serve({});
    await server?.close();
    server = undefined;
    const error = await effectError(httpStorage().download(`${url}/m.bin`, target, never));
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('rejects promptly when the signal aborts mid-download', async () => {
    const url = await serve({
      '/m.tar': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-tar' });
        res.write(tarHeader({ name: 'big.bin' }, 1_000_000));
      },
    });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const error = await effectError(httpStorage().download(`${url}/m.tar`, target, controller.signal));
    expect(error.message).toContain('aborted');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('streams a 200 MiB download to disk without holding it in memory', async () => {
    const size = 200 * 1024 * 1024;
    const block = Buffer.alloc(1024 * 1024, 7);
    const url = await serve({
      '/small.bin': send(block),
      '/big.bin': (_req, res) => {
        res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' });
        let sent = 0;
        const pump = (): void => {
          while (sent < size) {
            sent += block.length;
            if (!res.write(block)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        pump();
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
