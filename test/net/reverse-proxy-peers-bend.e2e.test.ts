/**
 * reverseProxy against what a hostile peer found (a probe of the agent port): an answer's head the proxy must not
 * choke on or pass on half read, an answer cut by a reset that must not look whole, a client pipelining without end,
 * and a body a client keeps sending after its answer.
 */
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { waitFor } from '../../src/testing/wait';
import { rawSocket, sendWhole } from '../helpers/raw-socket';
import { closePeers, send, startProxy, startUpstream, type ProxyPeers } from './reverse-proxy-harness';

const peers: ProxyPeers = {};
afterEach(() => closePeers(peers));

/** A model server that writes `reply` on each connection's first bytes, then does what `after` says with it. */
const startRawUpstream = async (reply: string, after: (socket: Socket) => void = () => undefined) => {
  const raw = (peers.raw = createTcpServer((socket: Socket) =>
    socket
      .once('data', () => socket.write(reply, 'latin1', () => after(socket)))
      .on('error', () => undefined),
  ));
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  return (peers.bench = await startProxy((raw.address() as AddressInfo).port));
};

/** `count` header lines `x-<i>: v`: past the 1,000 node:http keeps of an answer by default. */
const manyHeaders = (count: number): string =>
  Array.from({ length: count }, (_unused, i) => `x-${i}: v\r\n`).join('');

describe('reverseProxy, answers that bend HTTP', () => {
  it('passes on an answer whose reason phrase holds a control character, with the status’s own reason, and goes on', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): number => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const bench = await startRawUpstream('HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nok');
      const answer = await send(bench.port);
      expect([answer.status, answer.statusMessage, answer.body.toString()]).toEqual([200, 'OK', 'ok']);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('cuts an answer framed by the close that the model server breaks off with a reset: never a whole-looking body', async () => {
    const bench = await startRawUpstream(
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"outputs":[1,2,',
      (socket) => setTimeout(() => socket.resetAndDestroy(), 100),
    );
    const answer = await send(bench.port, { method: 'POST', body: Buffer.from('{}') });
    expect([answer.status, answer.body.toString(), answer.complete]).toEqual([
      200,
      '{"outputs":[1,2,',
      false,
    ]);
    await waitFor(() => bench.log.lines.some((line) => line.kind === 'cut'), 2000, 'the cut logged');
  });

  it.each([
    ['chunked, broken off', 'Transfer-Encoding: chunked\r\n\r\n10\r\n{"outputs":[1,2,\r\n', 'end'],
    ['framed by the close, reset', '\r\n{"outputs":[1,2,', 'reset'],
  ] as const)(
    'resets the connection of an HTTP/1.0 client whose answer the model server cuts (%s): its body is framed by the close, which would make it look whole',
    async (_case, rest, how) => {
      const bench = await startRawUpstream(
        `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${rest}`,
        (socket) => setTimeout(() => (how === 'end' ? socket.end() : socket.resetAndDestroy()), 100),
      );
      const client = await rawSocket(bench.port);
      let error: string | undefined;
      client.socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code));
      client.socket.write('POST /v2/models/m/infer HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}');
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(client.received()).not.toMatch(/content-length|transfer-encoding/i);
      expect(error).toBe('ECONNRESET');
    },
  );

  it("passes on a 204 without the Content-Length RFC 9110 forbids it, as Go's server drops it, and goes on", async () => {
    const bench = await startRawUpstream(
      'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\nX-Kept: yes\r\n\r\nhello',
    );
    const client = await rawSocket(bench.port);
    client.socket.write('DELETE /v2/models/m HTTP/1.1\r\nHost: a\r\n\r\n');
    await waitFor(() => client.received().includes('\r\n\r\n'), 5000, 'the answer');
    const head = client.received().split('\r\n\r\n')[0]!;
    expect(head).toMatch(/^HTTP\/1\.1 204 No Content\r\n/);
    expect(head).toMatch(/\r\nX-Kept: yes(\r\n|$)/);
    expect(head).not.toMatch(/content-length|transfer-encoding/i);
    client.socket.destroy();
  });

  it('reads every header of an answer past 1,000 lines: a header its Connection lists is still dropped', async () => {
    const bench = await startRawUpstream(
      `HTTP/1.1 200 OK\r\n${manyHeaders(1100)}Connection: X-Secret\r\nX-Secret: s\r\nContent-Length: 2\r\n\r\nok`,
    );
    const client = await rawSocket(bench.port);
    client.socket.write('GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    await client.closed;
    const received = client.received();
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nok$/);
    expect(received.match(/^x-\d+: v\r$/gm)).toHaveLength(1100);
    expect(received.toLowerCase()).not.toContain('x-secret');
  });

  it('answers 502 to a coding other than chunked named past 1,000 header lines', async () => {
    const bench = await startRawUpstream(
      `HTTP/1.1 200 OK\r\n${manyHeaders(1100)}Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n`,
    );
    const answer = await send(bench.port);
    expect([answer.status, answer.body.toString()]).toEqual([502, 'the model server did not answer\n']);
  });
});

describe('reverseProxy, clients that bend HTTP', () => {
  it("proxies a connection's pipelined requests one at a time, as Go's server does, and answers them in order", async () => {
    let atOnce = 0;
    let most = 0;
    const upstream = (peers.upstream = await startUpstream((req, res) => {
      most = Math.max(most, ++atOnce);
      setTimeout(() => {
        atOnce--;
        res.end(`answer to ${req.url}`);
      }, 50);
    }));
    const bench = (peers.bench = await startProxy(upstream.port));
    const client = await rawSocket(bench.port);
    const paths = ['/1', '/2', '/3', '/4'];
    client.socket.write(
      paths
        .map((path, i) => `GET ${path} HTTP/1.1\r\nHost: a\r\n${i === 3 ? 'Connection: close\r\n' : ''}\r\n`)
        .join(''),
    );
    await client.closed;
    expect(client.received().match(/answer to \/\d/g)).toEqual(paths.map((path) => `answer to ${path}`));
    expect(most).toBe(1);
  });

  it('closes a connection that pipelines past 16 waiting requests: one upstream exchange at most, the others served', async () => {
    const upstream = (peers.upstream = await startUpstream((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow'), 1000);
      else res.end('quick');
    }));
    const bench = (peers.bench = await startProxy(upstream.port));
    const flood = await rawSocket(bench.port);
    flood.socket.write('GET /slow HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(1000));
    await flood.closed;
    expect(upstream.seen.length).toBeLessThanOrEqual(1);
    expect((await send(bench.port, { path: '/quick' })).body.toString()).toBe('quick');
    await waitFor(() => bench.log.lines.some((line) => line.kind === 'pipelined'), 2000, 'the flood logged');
  });

  it('reads a body the upstream did not wait for only within the linger bounds, then closes the connection', async () => {
    const upstream = (peers.upstream = await startUpstream((_req, res) =>
      res.writeHead(413).end('too large'),
    ));
    const bench = (peers.bench = await startProxy(upstream.port, { timeoutMs: 60_000 }));
    const bodyBytes = 256 * 2 ** 20;
    const exchange = await sendWhole(
      bench.port,
      `POST /infer HTTP/1.1\r\nHost: a\r\nContent-Length: ${bodyBytes}\r\n\r\n`,
      Buffer.alloc(bodyBytes),
    );
    expect(exchange.received).toMatch(/^HTTP\/1\.1 413 /);
    // 16 MiB read at the most, then the close: the client could not send the rest (the kernel's buffers aside).
    expect(exchange.error).toMatch(/EPIPE|ECONNRESET/);
  });
});
