/** reverseProxy against peers that bend HTTP: smuggling attempts, broken heads, early answers, crowds, old clients. */
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { sleep, waitFor } from '../../src/testing/wait';
import { rawSocket } from '../helpers/raw-socket';
import {
  send,
  startProxy,
  startUpstream,
  valuesOf,
  type ProxyBench,
  type Upstream,
} from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let raw: Server | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  await new Promise((resolve) => (raw ? raw.close(resolve) : resolve(undefined)));
  bench = upstream = raw = undefined;
});

const start = async (handler: Upstream['handler'], options: Parameters<typeof startProxy>[1] = {}) => {
  upstream = await startUpstream(handler);
  bench = await startProxy(upstream.port, options);
  return { upstream, bench };
};

/** An upstream that answers each connection's first bytes with `reply` exactly, then closes it. */
const startRawUpstream = async (reply: string): Promise<ProxyBench> => {
  raw = createTcpServer((socket: Socket) =>
    socket.once('data', () => socket.end(reply)).on('error', () => undefined),
  );
  await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
  bench = await startProxy((raw.address() as AddressInfo).port);
  return bench;
};

/**
 * An upstream that answers the first request on each connection and closes the connection when a second one comes
 * on it: a kept-alive connection closed just as it is reused. Resolves with the connections it took.
 */
const startClosingOnReuse = async (): Promise<() => number> => {
  let connections = 0;
  raw = createTcpServer((socket: Socket) => {
    connections++;
    let requests = 0;
    socket.on('error', () => undefined);
    socket.on('data', () =>
      ++requests === 1 ? socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok') : socket.destroy(),
    );
  });
  await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
  bench = await startProxy((raw.address() as AddressInfo).port);
  return () => connections;
};

/** Writes `text` on a connection of its own to the proxy and resolves with all it got back once it closed. */
const exchangeRaw = async (text: string): Promise<string> => {
  const client = await rawSocket(bench!.port);
  client.socket.write(text);
  await client.closed;
  return client.received();
};

describe('reverseProxy, hostile peers', () => {
  it.each([
    ['a head that is not HTTP', 'garbage\r\n\r\n'],
    ['a status below 100', 'HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n'],
    [
      'a length and chunked at once',
      'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n',
    ],
    [
      'a 101 it was never asked for',
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n',
    ],
  ])('answers 502 to %s from the upstream', async (_what, reply) => {
    await startRawUpstream(reply);
    const answer = await send(bench!.port);
    expect([answer.status, answer.body.toString()]).toEqual([502, 'the model server did not answer\n']);
  });

  it('passes on a close-delimited answer whole (no length, no chunks)', async () => {
    await startRawUpstream('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end');
    const answer = await send(bench!.port);
    expect([answer.status, answer.body.toString(), answer.complete]).toEqual([200, 'until the end', true]);
  });

  it('keeps the body framed when the client lists Content-Length and Host in Connection (no smuggling)', async () => {
    const { upstream } = await start((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => res.end(`got ${Buffer.concat(chunks).toString()}`));
    });
    const smuggled = 'GET /admin HTTP/1.1\r\nHost: a\r\n\r\n';
    const received = await exchangeRaw(
      `POST /infer HTTP/1.1\r\nHost: a\r\nConnection: Content-Length, Host, close\r\n` +
        `Content-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
    );
    expect(received).toContain(`got ${smuggled}`);
    expect(upstream.seen.map(({ url }) => url)).toEqual(['/infer']);
    expect(valuesOf(upstream.seen[0]!.rawHeaders, 'host')).toEqual(['a']);
  });

  it('sends only the client address as X-Forwarded-For when the client lists that header in Connection', async () => {
    const { upstream } = await start((_req, res) => res.end());
    await exchangeRaw(
      'GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Forwarded-For\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n',
    );
    expect(valuesOf(upstream.seen[0]!.rawHeaders, 'x-forwarded-for')).toEqual(['127.0.0.1']);
  });

  it('answers an HTTP/1.0 client with a body delimited by the close', async () => {
    await start((_req, res) => {
      res.write('one ');
      res.end('two');
    });
    const received = await exchangeRaw('GET / HTTP/1.0\r\n\r\n');
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(received).not.toMatch(/transfer-encoding/i);
    expect(received.endsWith('\r\n\r\none two')).toBe(true);
  });

  it('passes on an answer the upstream sends before reading the upload, and reads the rest of the upload', async () => {
    await start((_req, res) => res.writeHead(413, { 'Content-Type': 'text/plain' }).end('too large'));
    const answer = await send(bench!.port, { method: 'POST', body: Buffer.alloc(4 * 2 ** 20) });
    expect([answer.status, answer.body.toString()]).toEqual([413, 'too large']);
    expect((await send(bench!.port)).status).toBe(413);
  });

  it('passes the final answer on after Early Hints (1xx)', async () => {
    await start((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.end('final');
    });
    const answer = await send(bench!.port);
    expect([answer.status, answer.body.toString()]).toEqual([200, 'final']);
  });

  it('answers every request when the upstream closes each connection after its answer', async () => {
    await start((req, res) => {
      res.on('finish', () => req.socket.destroy());
      res.end('once');
    });
    for (let i = 0; i < 20; i++) {
      const answer = await send(bench!.port, i % 2 === 0 ? {} : { method: 'POST', body: Buffer.from('x') });
      expect([answer.status, answer.body.toString()]).toEqual([200, 'once']);
    }
  });

  it('sends a bodiless request again on a new connection when its kept-alive one is closed as it is reused', async () => {
    const connections = await startClosingOnReuse();
    const answers = [
      await send(bench!.port),
      await send(bench!.port),
      await send(bench!.port, { method: 'DELETE' }),
    ];
    expect(answers.map(({ status, body }) => `${status} ${body.toString()}`)).toEqual([
      '200 ok',
      '200 ok',
      '200 ok',
    ]);
    expect(connections()).toBe(3);
  });

  it('answers 502, not twice sent, when a bodiless POST meets a kept-alive connection closed as it is reused, as Go does', async () => {
    const connections = await startClosingOnReuse();
    expect((await send(bench!.port)).status).toBe(200);
    // KServe's load call has no body, and is not to be made twice; an Idempotency-Key says a request may be.
    const load = { method: 'POST', path: '/v2/repository/models/m/load', headers: { 'content-length': '0' } };
    expect((await send(bench!.port, load)).status).toBe(502);
    expect(connections()).toBe(1);
    const keyed = await send(bench!.port, { ...load, headers: { ...load.headers, 'idempotency-key': 'k1' } });
    expect(keyed.status).toBe(200);
  });

  it('answers 502, not twice sent, when a request with a body meets a kept-alive connection closed as it is reused', async () => {
    const connections = await startClosingOnReuse();
    expect((await send(bench!.port)).status).toBe(200);
    expect((await send(bench!.port, { method: 'POST', body: Buffer.from('{"inputs":[]}') })).status).toBe(
      502,
    );
    expect(connections()).toBe(1);
  });

  it('queues a crowd past maxSockets: every request answered on at most maxSockets connections', async () => {
    const { upstream } = await start((_req, res) => void setTimeout(() => res.end('ok'), 20), {
      maxSockets: 4,
    });
    const answers = await Promise.all(Array.from({ length: 60 }, () => send(bench!.port)));
    expect(answers.every(({ status }) => status === 200)).toBe(true);
    expect(upstream.connections()).toBeLessThanOrEqual(4);
  });

  it('answers 504 to a request that waited in the queue past timeoutMs', async () => {
    let queuedAnswered = false;
    // The one upstream connection stays busy, its answer moving, until the queued request has had its answer.
    const { upstream } = await start(
      (_req, res) => {
        res.writeHead(200);
        const trickle = setInterval(() => {
          if (!queuedAnswered) return void res.write('.');
          clearInterval(trickle);
          res.end();
        }, 50);
      },
      { maxSockets: 1, timeoutMs: 400 },
    );
    const first = send(bench!.port);
    await waitFor(() => upstream.seen.length === 1, 10_000, 'the first request upstream');
    const queued = await send(bench!.port);
    queuedAnswered = true;
    expect(queued.status).toBe(504);
    expect(upstream.seen).toHaveLength(1); // it never left the queue
    expect((await first).status).toBe(200);
  });

  it('takes an upload slower than the head timeout and the idle timeout, within bodyTimeoutMs', async () => {
    await start(
      (req, res) => {
        let bytes = 0;
        req.on('data', (chunk: Buffer) => (bytes += chunk.length));
        req.on('end', () => res.end(`got ${bytes}`));
      },
      { limits: { requestTimeoutMs: 300, idleTimeoutMs: 300, bodyTimeoutMs: 10_000 } },
    );
    const client = await rawSocket(bench!.port);
    client.socket.write('POST /slow HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 10\r\n\r\n');
    for (let i = 0; i < 10; i++) {
      await sleep(120); // 1.2 s in all: four head timeouts
      client.socket.write('x');
    }
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK[^]*got 10$/);
  });

  it("sends an absolute-form request target on in origin form, its host as the Host, as Go's server and proxy do", async () => {
    const { upstream } = await start((_req, res) => res.end());
    await exchangeRaw(
      'GET http://model.example/v2/health/ready HTTP/1.1\r\nHost: model.example\r\nConnection: close\r\n\r\n',
    );
    await exchangeRaw(
      'GET HTTP://user@model.example:8080?x=1 HTTP/1.1\r\nHost: elsewhere\r\nConnection: close\r\n\r\n',
    );
    expect(upstream.seen.map(({ url, request }) => [url, request.headers.host])).toEqual([
      ['/v2/health/ready', 'model.example'],
      ['/?x=1', 'model.example:8080'],
    ]);
    await waitFor(() => bench!.proxy.inFlight() === 0, 10_000, 'no request in flight');
  });
});
