/** boundedServer on 127.0.0.1 with real sockets: each bound holds against a client that tries to outlast it. */
import type { IncomingMessage, RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { boundedServer, defaultServerLimits, type ServerLimits } from '../../src/net/bounded-server';
import { endAnswer } from '../../src/net/early-answer';
import { sleep, waitFor } from '../../src/testing/wait';
import { getHead, openDescriptors, rawSocket, sendWhole, type RawSocket } from '../helpers/raw-socket';

let server: Server | undefined;
const clients: RawSocket[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

const limits = (overrides: Partial<ServerLimits> = {}): ServerLimits => ({
  ...defaultServerLimits,
  requestTimeoutMs: 400,
  idleTimeoutMs: 400,
  ...overrides,
});

/** Serves with `listener` under `bounds` (and `reserveServes`) on 127.0.0.1; resolves with the port. */
const serveWith = (
  bounds: ServerLimits,
  listener: RequestListener,
  reserveServes?: (request: IncomingMessage) => boolean,
): Promise<number> =>
  new Promise((resolve) => {
    server = boundedServer(bounds, listener, reserveServes);
    server.listen(0, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port));
  });

/** Serves `ok` (or holds every answer for `holdMs`) under `bounds`; resolves with the port. */
const serve = (bounds: ServerLimits, holdMs = 0): Promise<number> =>
  serveWith(bounds, (_request, response) => {
    const answer = () => response.end('ok');
    if (holdMs === 0) answer();
    else setTimeout(answer, holdMs).unref();
  });

/** Serves `ok` once the whole request body has arrived, under `bounds`; resolves with the port. */
const serveAfterBody = (bounds: ServerLimits): Promise<number> =>
  serveWith(bounds, (request, response) => {
    request.resume();
    request.on('end', () => response.end('ok'));
  });

const connect = async (port: number): Promise<RawSocket> => {
  const client = await rawSocket(port);
  clients.push(client);
  return client;
};

describe('boundedServer', () => {
  it('closes a kept-alive connection once it has been idle for idleTimeoutMs', async () => {
    const client = await connect(await serve(limits()));
    client.socket.write(getHead('/'));
    // Not before its time (nothing else closes it: that it closes is the rest of the claim).
    const lived = await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200/);
    expect(lived).toBeGreaterThanOrEqual(350);
  });

  it.each([
    ['both timers due at once', limits()],
    ['the head timer due first', limits({ idleTimeoutMs: 2000 })],
  ])('closes a connection that never sends a byte without a word (%s)', async (_, bounds) => {
    const client = await connect(await serve(bounds));
    await client.closed;
    expect(client.received()).toBe('');
  });

  it.each([
    ['no bodyTimeoutMs', {}],
    ['a long bodyTimeoutMs', { bodyTimeoutMs: 60_000 }],
  ])(
    'cuts a head trickled a header at a time (slowloris) once requestTimeoutMs has passed, with %s',
    async (_what, body) => {
      const client = await connect(await serve(limits({ idleTimeoutMs: 60_000, ...body })));
      client.socket.write('GET / HTTP/1.1\r\nHost: test\r\n');
      const trickle = setInterval(() => client.open() && client.socket.write(`X-${Date.now()}: a\r\n`), 50);
      const lived = await client.closed.finally(() => clearInterval(trickle));
      // Cut by requestTimeoutMs: the idle timeout is a minute away, and fields keep coming.
      expect(client.received()).toMatch(/^(HTTP\/1\.1 408|$)/);
      expect(lived).toBeGreaterThanOrEqual(350);
    },
  );

  /** Sends a POST head for `bytes` and then its body a byte every 100 ms while the connection is open. */
  const trickled = async (port: number, bytes: number): Promise<{ client: RawSocket; sent: number }> => {
    const client = await connect(port);
    client.socket.write(
      `POST / HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: ${bytes}\r\n\r\n`,
    );
    let sent = 0;
    for (; sent < bytes && client.open(); sent++) {
      await sleep(100);
      client.socket.write('x');
    }
    return { client, sent };
  };

  it('takes a body trickled past requestTimeoutMs when bodyTimeoutMs allows it', async () => {
    const port = await serveAfterBody(limits({ idleTimeoutMs: 60_000, bodyTimeoutMs: 20_000 }));
    const { client } = await trickled(port, 8); // 0.8 s at least: twice requestTimeoutMs
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200/);
  });

  it('cuts a body trickled past bodyTimeoutMs', async () => {
    const port = await serveAfterBody(limits({ idleTimeoutMs: 60_000, bodyTimeoutMs: 1200 }));
    const { client, sent } = await trickled(port, 30); // 3 s at least
    await client.closed;
    expect(client.received()).toMatch(/^(HTTP\/1\.1 408|$)/);
    expect(sent).toBeLessThan(30); // cut before the body was whole
  });

  it('cuts a body trickled past requestTimeoutMs when no bodyTimeoutMs is set', async () => {
    const client = await connect(await serveAfterBody(limits({ idleTimeoutMs: 60_000 })));
    client.socket.write('POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n');
    const trickle = setInterval(() => client.open() && client.socket.write('x'), 50);
    // Cut (no 200): the 100 bytes would be whole after 5 s.
    await client.closed.finally(() => clearInterval(trickle));
    expect(client.received()).toMatch(/^(HTTP\/1\.1 408|$)/);
  });

  it('answers CONNECT with 501 and closes, instead of dropping the connection without a word', async () => {
    const client = await connect(await serve(limits()));
    client.socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    await client.closed;
    expect(client.received()).toMatch(
      /^HTTP\/1\.1 501 Not Implemented\r\n[^]*\r\n\r\nCONNECT is not supported\n$/,
    );
  });

  it('answers 431 and closes when the request line and headers pass maxHeaderBytes (a huge URL)', async () => {
    const port = await serve(limits());
    const url = await connect(port);
    url.socket.write(getHead(`/${'a'.repeat(20_000)}`));
    await url.closed;
    const headers = await connect(port);
    headers.socket.write(getHead('/', `Cookie: ${'c'.repeat(9000)}\r\n`));
    await headers.closed;
    expect([url.received(), headers.received()]).toEqual([
      expect.stringMatching(/^HTTP\/1\.1 431/),
      expect.stringMatching(/^HTTP\/1\.1 431/),
    ]);
  });

  it('answers at most maxRequestsPerSocket of a pipelined flood on one connection, the rest 503, then closes it', async () => {
    let answered = 0;
    const port = await serveWith(limits({ maxRequestsPerSocket: 20 }), (_request, response) => {
      answered++;
      response.end('ok');
    });
    const client = await connect(port);
    client.socket.write(getHead('/').repeat(2000));
    await client.closed;
    const statuses = client.received().match(/HTTP\/1\.1 \d+/g) ?? [];
    expect(answered).toBe(20);
    expect(statuses.slice(0, 20).every((line) => line.endsWith('200'))).toBe(true);
    expect(statuses.slice(20).every((line) => line.endsWith('503'))).toBe(true);
  });

  it('holds at most maxConnections: 300 silent clients keep no more, and a new request is still answered', async () => {
    const port = await serve(limits({ maxConnections: 16, requestTimeoutMs: 60_000, idleTimeoutMs: 60_000 }));
    const before = openDescriptors();
    for (let i = 0; i < 300; i++) await connect(port);
    const stillOpen = (): number => clients.filter((client) => client.open()).length;
    await waitFor(() => stillOpen() <= 16, 10_000, 'the connections past the cap closed');
    // Each connection the server holds is two descriptors here (its end and the client's), each one it closed none.
    expect(openDescriptors() - before).toBeLessThanOrEqual(2 * 16 + 8);
    const probe = await connect(port);
    probe.socket.write(getHead('/', 'Connection: close\r\n'));
    await probe.closed;
    expect(probe.received()).toMatch(/^HTTP\/1\.1 200/);
  });

  it('closes a connection past maxConnections and the reserve at once when every held one is being answered', async () => {
    // Every timeout a minute away, and no answer ever sent: only the cap closes a connection within the test.
    let arrived = 0;
    const port = await serveWith(
      limits({ maxConnections: 4, reservedConnections: 2, idleTimeoutMs: 60_000, requestTimeoutMs: 60_000 }),
      () => void arrived++,
    );
    const busy: RawSocket[] = [];
    for (let i = 0; i < 6; i++) {
      const client = await connect(port); // one at a time: a connection yet to send its head gives way
      client.socket.write(getHead('/'));
      busy.push(client);
      await waitFor(() => arrived === i + 1, 10_000, `request ${i + 1} in the server's hands`);
    }
    const late = await connect(port);
    await late.closed;
    expect(late.received()).toBe('');
    expect(busy.every((client) => client.open())).toBe(true);
  });

  it('keeps reservedConnections past the cap for what reserveServes takes, answering the rest 503 there', async () => {
    // The slow requests are never answered within the test: their connections stay busy, however long it takes.
    let slow = 0;
    const port = await serveWith(
      limits({ maxConnections: 4, reservedConnections: 2, idleTimeoutMs: 60_000 }),
      (request, response) => {
        if (request.url === '/probe') return void response.end('probed');
        slow++;
      },
      (request) => request.url === '/probe',
    );
    const busy = await Promise.all(Array.from({ length: 4 }, () => connect(port)));
    for (const client of busy) client.socket.write(getHead('/slow'));
    await waitFor(() => slow === 4, 10_000, "the four slow requests in the server's hands");
    const probe = await connect(port);
    probe.socket.write(getHead('/probe', 'Connection: close\r\n'));
    const other = await connect(port);
    other.socket.write(getHead('/slow'));
    await Promise.all([probe.closed, other.closed]);
    expect(probe.received()).toMatch(/^HTTP\/1\.1 200 OK[^]*\r\n\r\nprobed$/);
    expect(other.received()).toMatch(
      /^HTTP\/1\.1 503 [^]*Retry-After: 1\r\n[^]*busy: every connection is taken/i,
    );
    expect(busy.every((client) => client.open())).toBe(true);
  });

  it('gives the place of a connection draining the body of an early answer to a new connection', async () => {
    const port = await serveWith(
      limits({ maxConnections: 4, reservedConnections: 0, idleTimeoutMs: 60_000 }),
      (request, response) => {
        if (request.method === 'GET') return void response.end('ok');
        response.writeHead(405, { 'content-length': 0, connection: 'close' });
        endAnswer(request, response);
      },
    );
    const draining = await Promise.all(Array.from({ length: 4 }, () => connect(port)));
    for (const client of draining)
      client.socket.write('POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\nab');
    await waitFor(
      () => draining.every((client) => client.received().startsWith('HTTP/1.1 405')),
      10_000,
      'the 405s',
    );
    const next = await connect(port);
    next.socket.write(getHead('/', 'Connection: close\r\n'));
    await next.closed;
    expect(next.received()).toMatch(/^HTTP\/1\.1 200 OK[^]*ok$/);
    expect(draining.filter((client) => client.open()).length).toBe(3);
  });

  it('answers 431 to a client that sends a 1 MiB head whole before reading, and 501 to CONNECT followed by bytes, with no reset', async () => {
    const port = await serve(limits());
    const huge = await sendWhole(port, getHead('/', `Cookie: ${'c'.repeat(2 ** 20)}\r\n`), Buffer.alloc(0));
    const tunnel = await sendWhole(
      port,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      Buffer.alloc(2 ** 20),
    );
    expect([huge.error, huge.received.split('\r\n')[0]]).toEqual([
      undefined,
      'HTTP/1.1 431 Request Header Fields Too Large',
    ]);
    expect([tunnel.error, tunnel.received.split('\r\n')[0]]).toEqual([
      undefined,
      'HTTP/1.1 501 Not Implemented',
    ]);
  });
});
