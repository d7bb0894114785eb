/** reverseProxy on real sockets: what the client sends reaches the model server as sent, and its answer comes back unchanged. */
import { createHash, randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { Socket } from 'node:net';
import { rawSocket } from '../helpers/raw-socket';
import {
  namesOf,
  send,
  startProxy,
  startUpstream,
  valuesOf,
  type ProxyBench,
  type Upstream,
} from './reverse-proxy-harness';

let upstream: Upstream;
let bench: ProxyBench;
beforeEach(async () => {
  upstream = await startUpstream((_req, res) => res.end('ok'));
  bench = await startProxy(upstream.port);
});
afterEach(async () => {
  await bench.close();
  await upstream.close();
});

const MiB = 2 ** 20;
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** An upstream answer that echoes the request body back with its digest. */
const echo = (): Upstream['handler'] => (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    res.writeHead(200, { 'X-Body-Sha256': sha256(body), 'X-Body-Length': body.length }).end(body);
  });
};

describe('reverseProxy', () => {
  it('passes the method, path and query on verbatim', async () => {
    for (const path of ['/v2/models/a%2Fb/infer?x=1&x=2', '//a/../b/./c?q=%20&&=', '/v2/models/m/infer?'])
      await send(bench.port, { method: 'POST', path, body: Buffer.from('{}') });
    await send(bench.port, { method: 'DELETE', path: '/x' });
    expect(upstream.seen.map(({ method, url }) => `${method} ${url}`)).toEqual([
      'POST /v2/models/a%2Fb/infer?x=1&x=2',
      'POST //a/../b/./c?q=%20&&=',
      'POST /v2/models/m/infer?',
      'DELETE /x',
    ]);
  });

  it('passes headers on with their case and duplicates, drops hop-by-hop ones and appends X-Forwarded-For', async () => {
    const client = await rawSocket(bench.port);
    client.socket.write(
      'GET /h HTTP/1.1\r\nHost: model.example:8080\r\nX-Dup: 1\r\nx-dup: 2\r\nX-MiXeD-Case: v\r\n' +
        'Connection: keep-alive, X-Hop-Named\r\nX-Hop-Named: secret\r\nKeep-Alive: timeout=5\r\n' +
        'Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic c2VjcmV0\r\nTE: trailers, deflate\r\n' +
        'Trailer: X-Later\r\nAuthorization: Bearer token\r\nX-Forwarded-For: 10.0.0.1\r\n' +
        'x-forwarded-for: 10.0.0.2\r\nConnection: close\r\n\r\n',
    );
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK/);
    const { rawHeaders } = upstream.seen[0]!;
    expect(valuesOf(rawHeaders, 'host')).toEqual(['model.example:8080']);
    expect(namesOf(rawHeaders).filter((name) => /dup|mixed/i.test(name))).toEqual([
      'X-Dup',
      'x-dup',
      'X-MiXeD-Case',
    ]);
    expect(valuesOf(rawHeaders, 'x-dup')).toEqual(['1', '2']);
    expect(valuesOf(rawHeaders, 'authorization')).toEqual(['Bearer token']);
    expect(valuesOf(rawHeaders, 'te')).toEqual(['trailers']);
    expect(valuesOf(rawHeaders, 'x-forwarded-for')).toEqual(['10.0.0.1, 10.0.0.2, 127.0.0.1']);
    for (const hop of ['x-hop-named', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'trailer'])
      expect(valuesOf(rawHeaders, hop)).toEqual([]);
    expect(valuesOf(rawHeaders, 'connection')).toEqual(['keep-alive']); // the proxy's own, to its upstream
  });

  it('answers with the upstream status, reason, headers (case, duplicates) and body, minus hop-by-hop headers', async () => {
    upstream.handler = (_req, res) => {
      const headers = [
        ['Set-Cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['X-MiXeD', 'v'],
        ['Connection', 'X-Upstream-Hop'],
        ['X-Upstream-Hop', 'x'],
        ['Keep-Alive', 'timeout=30'],
        ['Content-Type', 'application/json'],
      ];
      res.writeHead(404, 'No Such Model', headers.flat());
      res.end('{"error":"model m not found"}');
    };
    const answer = await send(bench.port, { path: '/v2/models/m' });
    expect([answer.status, answer.statusMessage]).toEqual([404, 'No Such Model']);
    expect(answer.body.toString()).toBe('{"error":"model m not found"}');
    expect(valuesOf(answer.rawHeaders, 'set-cookie')).toEqual(['a=1', 'b=2']);
    expect(namesOf(answer.rawHeaders)).toEqual(
      expect.arrayContaining(['Set-Cookie', 'set-cookie', 'X-MiXeD']),
    );
    expect(valuesOf(answer.rawHeaders, 'x-upstream-hop')).toEqual([]);
    expect(valuesOf(answer.rawHeaders, 'keep-alive')).not.toContain('timeout=30');
    expect(valuesOf(answer.rawHeaders, 'content-type')).toEqual(['application/json']);
  });

  it.each([
    [500, 'POST', 'boom'],
    [204, 'POST', ''],
    [304, 'GET', ''],
  ])('passes a %i answer to %s on unchanged', async (status, method, body) => {
    upstream.handler = (_req, res) => res.writeHead(status, { ETag: '"v1"' }).end(body || undefined);
    const answer = await send(bench.port, { method, body: method === 'POST' ? Buffer.from('x') : undefined });
    expect([answer.status, answer.body.toString(), valuesOf(answer.rawHeaders, 'etag')]).toEqual([
      status,
      body,
      ['"v1"'],
    ]);
  });

  it('answers HEAD with the upstream Content-Length and no body', async () => {
    upstream.handler = (req, res) =>
      res
        .writeHead(200, { 'Content-Length': 1234, 'X-Method': req.method })
        .end(req.method === 'HEAD' ? '' : 'x');
    const answer = await send(bench.port, { method: 'HEAD' });
    expect([answer.status, answer.body.length, answer.complete]).toEqual([200, 0, true]);
    expect(valuesOf(answer.rawHeaders, 'content-length')).toEqual(['1234']);
    expect(valuesOf(answer.rawHeaders, 'x-method')).toEqual(['HEAD']);
  });

  it('streams 8 MiB of random bytes both ways byte for byte, with a length and chunked', async () => {
    upstream.handler = echo();
    const payload = randomBytes(8 * MiB);
    const withLength = await send(bench.port, { method: 'POST', body: payload });
    const chunks = Array.from({ length: 64 }, (_chunk, i) =>
      payload.subarray(i * 128 * 1024, (i + 1) * 128 * 1024),
    );
    const chunked = await send(bench.port, { method: 'POST', body: chunks });
    for (const answer of [withLength, chunked]) {
      expect(answer.status).toBe(200);
      expect(answer.body.length).toBe(payload.length);
      expect(sha256(answer.body)).toBe(sha256(payload));
      expect(valuesOf(answer.rawHeaders, 'x-body-sha256')).toEqual([sha256(payload)]);
    }
    expect(valuesOf(upstream.seen[0]!.rawHeaders, 'content-length')).toEqual([String(payload.length)]);
    expect(valuesOf(upstream.seen[1]!.rawHeaders, 'transfer-encoding')).toEqual(['chunked']);
  });

  it('streams an 8 MiB answer of unknown length (chunked from the upstream) whole', async () => {
    const payload = randomBytes(8 * MiB);
    upstream.handler = (_req, res) => {
      for (let at = 0; at < payload.length; at += MiB) res.write(payload.subarray(at, at + MiB));
      res.end();
    };
    const answer = await send(bench.port);
    expect([answer.complete, sha256(answer.body)]).toEqual([true, sha256(payload)]);
  });

  it('sends a bodiless POST with Content-Length: 0, as Go does', async () => {
    await send(bench.port, { method: 'POST' });
    const { rawHeaders } = upstream.seen[0]!;
    expect([valuesOf(rawHeaders, 'content-length'), valuesOf(rawHeaders, 'transfer-encoding')]).toEqual([
      ['0'],
      [],
    ]);
  });

  it('passes trailers on both ways', async () => {
    upstream.handler = (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { Trailer: 'X-Checksum', 'X-Got-Trailer': req.rawTrailers.join('=') });
        res.write('body');
        res.addTrailers({ 'X-Checksum': 'abc123' });
        res.end();
      });
    };
    const answer = await new Promise<{ trailers: ReadonlyArray<string>; got: string[] }>(
      (resolve, reject) => {
        const client = request(
          { port: bench.port, host: '127.0.0.1', method: 'POST', agent: false },
          (res) => {
            res.resume();
            res.on('end', () =>
              resolve({ trailers: res.rawTrailers, got: valuesOf(res.rawHeaders, 'x-got-trailer') }),
            );
          },
        );
        client.on('error', reject);
        client.setHeader('Trailer', 'X-Request-Sum');
        client.write('data');
        client.addTrailers({ 'X-Request-Sum': '42' });
        client.end();
      },
    );
    expect(answer).toEqual({ trailers: ['X-Checksum', 'abc123'], got: ['X-Request-Sum=42'] });
  });

  it('does not deadlock on Expect: 100-continue', async () => {
    upstream.handler = echo();
    const body = await new Promise<string>((resolve, reject) => {
      const client = request(
        {
          port: bench.port,
          host: '127.0.0.1',
          method: 'PUT',
          agent: false,
          headers: { Expect: '100-continue' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve(Buffer.concat(chunks).toString()));
        },
      );
      client.on('error', reject);
      client.on('continue', () => client.end('after continue'));
    });
    expect(body).toBe('after continue');
  });

  it('reuses kept-alive upstream connections: 50 sequential requests on one connection', async () => {
    for (let i = 0; i < 50; i++) {
      const answer = await send(bench.port, i % 2 === 0 ? {} : { method: 'POST', body: Buffer.from('x') });
      expect(answer.status).toBe(200);
    }
    expect(upstream.seen).toHaveLength(50);
    expect(upstream.connections()).toBe(1);
  });

  it('leaves no timer or listener behind: 200 requests on one kept-alive connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const warnings: Error[] = [];
    const onWarning = (warning: Error): number => warnings.push(warning);
    process.on('warning', onWarning);
    const sockets: Socket[] = [];
    bench.server.on('connection', (socket: Socket) => sockets.push(socket));
    const once = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const client = request({ host: '127.0.0.1', port: bench.port, method: 'POST', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        client.on('error', reject);
        client.end('{}');
      });
    const counted = (socket: Socket): string[] =>
      socket.eventNames().map((name) => `${String(name)}:${socket.listenerCount(name)}`);
    const listeners = (): string => sockets.map((socket) => counted(socket).join()).join(';');
    const timers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    await once();
    const [listenersAfterOne, timersAfterOne] = [listeners(), timers()];
    for (let i = 0; i < 200; i++) await once();
    expect([sockets.length, listeners(), timers()]).toEqual([1, listenersAfterOne, timersAfterOne]);
    expect(bench.proxy.inFlight()).toBe(0);
    process.off('warning', onWarning);
    agent.destroy();
    expect(warnings).toEqual([]);
  });

  it('answers pipelined requests in order on one client connection', async () => {
    const client = await rawSocket(bench.port);
    client.socket.write(
      `${'GET /1 HTTP/1.1\r\nHost: a\r\n\r\n'}GET /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`,
    );
    await client.closed;
    expect(client.received().match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
    expect(upstream.seen.map(({ url }) => url)).toEqual(['/1', '/2']);
    expect(bench.proxy.inFlight()).toBe(0);
  });
});
