/** reverseProxy and heads: the model server's answer heads as large as a client's may be; X-Forwarded-For as Go's. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { reverseProxy } from '../../src/net/reverse-proxy';
import { rawSocket } from '../helpers/raw-socket';
import { send, startProxy, startUpstream, type ProxyBench, type Upstream } from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  bench = upstream = undefined;
});

describe('reverseProxy, answer heads', () => {
  it('passes on an answer whose head is past node:http’s 16 KiB, up to the 64 KiB a request head may have', async () => {
    const big = 'a'.repeat(40 * 1024);
    upstream = await startUpstream((_req, res) => res.setHeader('X-Big', big).end('ok'));
    bench = await startProxy(upstream.port);
    // A raw client: node:http's own would refuse the head past 16 KiB.
    const client = await rawSocket(bench.port);
    client.socket.write('GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(client.received()).toContain(`\r\nX-Big: ${big}\r\n`);
    expect(client.received().endsWith('\r\n\r\nok')).toBe(true);
  });

  it('answers 502 to an answer head past 64 KiB', async () => {
    upstream = await startUpstream((_req, res) => res.setHeader('X-Big', 'a'.repeat(80 * 1024)).end('ok'));
    bench = await startProxy(upstream.port);
    const answer = await send(bench.port);
    expect([answer.status, answer.body.toString()]).toEqual([502, 'the model server did not answer\n']);
  });

  it("logs a bad answer head's error without the upstream's raw bytes (Node's rawPacket), even at debug", async () => {
    upstream = await startUpstream((_req, res) =>
      res.setHeader('X-Token', `secret-${'a'.repeat(80 * 1024)}`).end(),
    );
    bench = await startProxy(upstream.port); // its logger at debug, errors serialized whole
    expect((await send(bench.port)).status).toBe(502);
    const failures = bench.log.withMessage('proxy failure');
    expect(failures.map((line) => (line as { err?: { code?: string } }).err?.code)).toEqual([
      'HPE_HEADER_OVERFLOW',
    ]);
    expect(JSON.stringify(failures)).not.toMatch(/rawPacket|secret-/);
  });

  it('sends an IPv4 client on a dual-stack port as Go does: 10.1.2.3, not ::ffff:10.1.2.3', async () => {
    upstream = await startUpstream((req, res) => res.end(req.headers['x-forwarded-for']));
    const proxy = reverseProxy({
      target: { host: '127.0.0.1', port: upstream.port },
      maxSockets: 2,
      timeoutMs: 2000,
      body: { stallMs: 2000, minRate: 1024 },
      log: pino({ level: 'silent' }),
    });
    // Every interface, as the surface binds by default: node:http names an IPv4 client by its IPv4-mapped address.
    const server: Server = createServer(proxy.handle);
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const forwardedFor = await new Promise<string>((resolve, reject) =>
        request({ host: '127.0.0.1', port, agent: false }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve(text));
        })
          .on('error', reject)
          .end(),
      );
      expect(forwardedFor).toBe('127.0.0.1');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      proxy.close();
    }
  });
  it.each([
    ['two Host headers', 'Host: a\r\nHost: b\r\n', 'too many Host headers'],
    ['a Host with a space', 'Host: a b\r\n', 'malformed Host header'],
    ['a Host with user info', 'Host: user@a\r\n', 'malformed Host header'],
    ['a Host with a path', 'Host: a/admin\r\n', 'malformed Host header'],
  ])(
    'answers 400 to %s, sending nothing upstream, as Go’s server does (no request a model server reads another way)',
    async (_case, hostLines, reason) => {
      upstream = await startUpstream((_req, res) => res.end('ok'));
      bench = await startProxy(upstream.port);
      const client = await rawSocket(bench.port);
      client.socket.write(`GET /v2/models/m HTTP/1.1\r\n${hostLines}\r\n`);
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(client.received()).toContain('\r\nConnection: close\r\n');
      expect(client.received().endsWith(`\r\n\r\n400 Bad Request: ${reason}`)).toBe(true);
      expect(upstream.seen).toEqual([]);
    },
  );

  it('passes on a Host that Go takes: an IPv6 literal with a port, sub-delims, and an empty one', async () => {
    upstream = await startUpstream((req, res) => res.end(JSON.stringify(req.headers.host)));
    bench = await startProxy(upstream.port);
    for (const host of ['[::1]:8080', "a-b_c~d.e!$&'()*+,;=%41:1", '']) {
      const client = await rawSocket(bench.port);
      client.socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(client.received().endsWith(`\r\n\r\n${JSON.stringify(host)}`)).toBe(true);
    }
  });
});
