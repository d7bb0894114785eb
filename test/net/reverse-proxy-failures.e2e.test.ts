/** reverseProxy when a peer misbehaves: the upstream down, silent or cutting; the client leaving; upgrades; log floods. */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { waitFor } from '../../src/testing/wait';
import { atLeast, atLevel } from '../helpers/log-sink';
import { getHead, rawSocket } from '../helpers/raw-socket';
import {
  closedPort,
  postFromAnotherProcess,
  send,
  startProxy,
  startUpstream,
  type ProxyBench,
  type Upstream,
} from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  bench = upstream = undefined;
});

/**
 * Starts the upstream with `handler` and the proxy in front of it. The whole request may take a minute (the agent
 * port's bound is the proxy timeout, as here): these tests judge the proxy's pacing of a body, and 64 MiB held back
 * for 3 s took more than the bench's default 5 s on a loaded machine (a 408 from the server's own bound).
 */
const start = async (handler: Upstream['handler'], options: Parameters<typeof startProxy>[1] = {}) => {
  upstream = await startUpstream(handler);
  bench = await startProxy(upstream.port, {
    ...options,
    limits: { bodyTimeoutMs: 60_000, ...options.limits },
  });
  return { upstream, bench };
};

/** Resolves once the connection of a request the upstream saw is closed: the request was torn down. */
const tornDown = (request: IncomingMessage): Promise<void> =>
  new Promise((resolve) =>
    request.socket.destroyed ? resolve() : request.socket.once('close', () => resolve()),
  );

describe('reverseProxy, failures', () => {
  it('answers 502 with a body naming nothing internal when the upstream is down', async () => {
    const port = await closedPort();
    bench = await startProxy(port);
    const answers = [
      await send(bench.port),
      await send(bench.port, { method: 'POST', body: Buffer.from('{}') }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(502);
      const body = answer.body.toString();
      expect(body).toBe('the model server did not answer\n');
      expect(body).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|localhost/);
      expect(body).not.toContain(String(port));
    }
    expect(bench.proxy.inFlight()).toBe(0);
  });

  it('answers 502 when the upstream closes the connection before its head', async () => {
    await start((req) => req.socket.destroy());
    expect((await send(bench!.port)).status).toBe(502);
  });

  it('answers 504 when the upstream is silent past timeoutMs, and tears its request down', async () => {
    const { upstream } = await start(() => undefined, { timeoutMs: 300 });
    const started = performance.now();
    const answer = await send(bench!.port);
    const took = performance.now() - started;
    expect([answer.status, answer.body.toString()]).toEqual([
      504,
      'the model server did not answer in time\n',
    ]);
    // Not before timeoutMs; and only the proxy's timer ends the wait for an upstream that never answers.
    expect(took).toBeGreaterThanOrEqual(250);
    await tornDown(upstream.seen[0]!.request);
  });

  it('answers a slow upstream (past the server idle timeout, within timeoutMs), then idles out as the server does', async () => {
    await start((_req, res) => void setTimeout(() => res.end('thought about it'), 700), {
      timeoutMs: 3000,
      limits: { idleTimeoutMs: 250 },
    });
    const client = await rawSocket(bench!.port);
    client.socket.write(getHead('/slow'));
    await waitFor(() => client.received().includes('thought about it'), 5000, 'the slow answer');
    // The server's own idle timeout is back once the exchange ended: the kept-alive connection goes after it
    // (nothing else closes it).
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK/);
  });

  it('tears the upstream request down at once when the client goes away', async () => {
    // The proxy's own timer is a minute away: only the client's going tears the request down within the test.
    const { upstream } = await start(() => undefined, { timeoutMs: 60_000 });
    const client = await rawSocket(bench!.port);
    client.socket.write(getHead('/abandoned'));
    await waitFor(() => upstream.seen.length === 1, 5000, 'the request upstream');
    client.socket.destroy();
    await tornDown(upstream.seen[0]!.request);
    await waitFor(() => bench!.proxy.inFlight() === 0, 10_000, 'no request in flight');
    expect(bench!.log.lines.filter(atLevel('warn'))).toEqual([]);
  });

  it('tears the upstream request down when the client aborts mid-upload', async () => {
    const { upstream } = await start((req) => req.resume());
    const client = await rawSocket(bench!.port);
    client.socket.write('POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n' + 'x'.repeat(1000));
    await waitFor(() => upstream.seen.length === 1, 5000, 'the request upstream');
    client.socket.destroy();
    await tornDown(upstream.seen[0]!.request);
    await waitFor(() => bench!.proxy.inFlight() === 0, 2000, 'no request in flight');
  });

  it.each([
    ['mid-upload', 'POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n' + 'x'.repeat(1000)],
    ['mid-answer', getHead('/stream')],
    [
      'with a body the server cannot parse',
      'POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nFFFFFFFFFFFFFFFFFFFF\r\n',
    ],
  ])(
    'blames nobody upstream when the client goes away %s: no warn line, one debug line saying so',
    async (_case, sent) => {
      // The upstream reads every body and starts an answer it never ends: only the client ends the exchange.
      const { upstream } = await start((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('the first part');
      });
      const client = await rawSocket(bench!.port);
      client.socket.write(sent);
      await waitFor(() => upstream.seen.length === 1, 5000, 'the request upstream');
      if (sent.startsWith('GET'))
        await waitFor(() => client.received().includes('the first part'), 5000, 'the part');
      if (!sent.includes('FFFF')) client.socket.destroy();
      await tornDown(upstream.seen[0]!.request);
      await waitFor(() => bench!.proxy.inFlight() === 0, 5000, 'no request in flight');
      // Any late event of the torn-down request has had its turn.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(bench!.log.lines.filter(atLeast('warn'))).toEqual([]);
      expect(bench!.log.lines.filter(atLevel('debug'))).toEqual([
        expect.objectContaining({ msg: 'the client went away before the exchange was over' }),
      ]);
    },
  );

  it('answers 408 to a body that stalls past body.stallMs, closes the connection and tears its upstream request down', async () => {
    const { upstream } = await start((req) => req.resume(), {
      timeoutMs: 60_000,
      body: { stallMs: 300, minRate: 0 },
    });
    const client = await rawSocket(bench!.port);
    client.socket.write('POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n' + 'x'.repeat(10));
    await waitFor(() => upstream.seen.length === 1, 5000, 'the request upstream');
    await tornDown(upstream.seen[0]!.request);
    await client.closed;
    expect(client.received()).toMatch(
      /^HTTP\/1\.1 408 [^]*\r\n\r\nthe request body did not arrive in time\n$/,
    );
    expect(bench!.log.lines.map(({ msg, kind }) => `${String(msg)} ${String(kind)}`)).toContain(
      'proxy failure slow-body',
    );
  });

  it('does not count the time the upstream holds a body back: 64 MiB the upstream reads only after 3 s', async () => {
    let got = 0;
    await start(
      (req, res) =>
        void setTimeout(() => {
          req.on('data', (chunk: Buffer) => (got += chunk.length));
          req.on('end', () => res.end(`got ${got}`));
        }, 3000),
      { timeoutMs: 60_000, body: { stallMs: 1000, minRate: 1024 } },
    );
    const answer = await send(bench!.port, { method: 'POST', body: Buffer.alloc(64 * 2 ** 20) });
    expect([answer.status, answer.body.toString()]).toEqual([200, `got ${64 * 2 ** 20}`]);
  });

  it('does not blame the client for a stall of its own: a body that came while the proxy did not run is read first', async () => {
    let got = 0;
    let stalled = false;
    await start(
      (req, res) => {
        req.on('data', (chunk: Buffer) => {
          got += chunk.length;
          if (stalled || got < 8 * 2 ** 20) return;
          stalled = true;
          // The process does not run for 1.5 s (a busy or paused host) after its timers were due to look: the
          // client's process goes on sending meanwhile, into the socket's buffers.
          setImmediate(() => {
            for (const until = Date.now() + 1500; Date.now() < until;);
          });
        });
        req.on('end', () => res.end(`got ${got}`));
      },
      { timeoutMs: 60_000, body: { stallMs: 1000, minRate: 1024 } },
    );
    const answer = await postFromAnotherProcess(bench!.port, 64 * 2 ** 20);
    expect(stalled).toBe(true);
    expect(answer).toEqual({ status: 200, body: `got ${64 * 2 ** 20}` });
  });

  /** Resumes in the next turn's check phase (after its timers and its I/O): `setImmediate`. */
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it('does not blame the client for a stall of its own when the client could not send either: the time it did not run is not counted', async () => {
    const chunk = 2 ** 20;
    const total = 16 * chunk;
    let got = 0;
    await start(
      (req, res) => {
        req.on('data', (bytes: Buffer) => void (got += bytes.length));
        req.on('end', () => res.end(`got ${got}`));
      },
      { timeoutMs: 60_000, body: { stallMs: 1000, minRate: 1024 } },
    );
    const request = httpRequest({
      port: bench!.port,
      method: 'POST',
      path: '/up',
      headers: { 'Content-Length': total },
    });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request.on('error', reject).on('response', (res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8').on('data', (text: string) => (body += text));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    for (let sent = 0; sent < total; sent += chunk) {
      request.write(Buffer.alloc(chunk));
      await waitFor(() => got === sent + chunk, 20_000, `${sent + chunk} bytes upstream`);
      if (sent !== 4 * chunk) continue;
      // Every byte is through: the whole process (the client is in it) does not run for 1.5 s, past the proxy's
      // timer, and sends again only after that timer has looked and found no byte waiting in the socket.
      await nextTurn();
      for (const until = Date.now() + 1500; Date.now() < until;);
      await nextTurn();
    }
    request.end();
    expect(await answer).toEqual({ status: 200, body: `got ${total}` });
  });

  it('does not cut an answer for a stall of its own: bytes that came while the proxy did not run are read first', async () => {
    let stalled = false;
    await start(
      (_req, res) => {
        res.writeHead(200, { 'Content-Length': 10 });
        let sent = 0;
        const trickle = setInterval(() => {
          res.write('x');
          if (++sent === 10) return void (clearInterval(trickle), res.end());
          if (sent !== 3) return;
          stalled = true;
          // The process does not run for 1.5 s, past timeoutMs; the upstream's next byte is due before the proxy's
          // timer, and sent as the process runs again.
          setImmediate(() => {
            for (const until = Date.now() + 1500; Date.now() < until;);
          });
        }, 100);
        res.on('close', () => clearInterval(trickle));
      },
      { timeoutMs: 1000 },
    );
    const answer = await send(bench!.port);
    expect(stalled).toBe(true);
    expect([answer.status, answer.complete, answer.body.toString()]).toEqual([200, true, 'x'.repeat(10)]);
  });

  it.each([
    ['with a length', { 'Content-Length': 1_000_000 }],
    ['chunked', {}],
  ])(
    'cuts the client at once when the upstream cuts mid-body (%s): never a body that looks complete',
    async (_how, headers) => {
      await start(
        (_req, res) => {
          res.writeHead(200, headers);
          res.write(Buffer.alloc(64 * 1024));
          setTimeout(() => res.socket?.destroy(), 50);
        },
        // The idle timer is a minute away: what ends the answer within the test is the cut itself.
        { timeoutMs: 60_000 },
      );
      const answer = await send(bench!.port);
      expect([answer.status, answer.complete]).toEqual([200, false]);
      expect(answer.body.length).toBeLessThan(1_000_000);
      expect(bench!.log.lines.filter(atLevel('warn'))).toMatchObject([{ kind: 'cut' }]);
    },
  );

  it('cuts a chunked answer the upstream stops sending past timeoutMs', async () => {
    await start(
      (_req, res) => {
        res.write('partial');
      },
      { timeoutMs: 300 },
    );
    const answer = await send(bench!.port);
    expect([answer.status, answer.complete, answer.body.toString()]).toEqual([200, false, 'partial']);
    expect(bench!.log.lines.filter(atLevel('warn'))).toMatchObject([{ kind: 'stalled' }]);
  });

  it('refuses WebSocket upgrades and CONNECT with 501, and sends neither upstream', async () => {
    const { upstream } = await start((_req, res) => res.end('no'));
    const websocket = await rawSocket(bench!.port);
    websocket.socket.write(
      getHead('/ws', 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: a\r\n'),
    );
    const connect = await rawSocket(bench!.port);
    connect.socket.write('CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: 10.0.0.1:443\r\n\r\n');
    await Promise.all([websocket.closed, connect.closed]);
    expect(websocket.received()).toMatch(/^HTTP\/1\.1 501 /);
    expect(connect.received()).toMatch(/^HTTP\/1\.1 501 /);
    expect(upstream.seen).toHaveLength(0);
  });

  it('proxies a request that offers h2c as HTTP/1.1, without the offer, and closes the connection after it', async () => {
    const { upstream } = await start((_req, res) => res.end('plain'));
    const client = await rawSocket(bench!.port);
    client.socket.write(
      getHead('/', 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMA\r\n'),
    );
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK[^]*plain$/);
    expect(upstream.seen[0]!.rawHeaders.map((value) => value.toLowerCase())).not.toContain('upgrade');
    expect(upstream.seen[0]!.rawHeaders.map((value) => value.toLowerCase())).not.toContain('http2-settings');
  });

  it('logs at most one warn line per failure kind a second, and never a header', async () => {
    // The proxy's clock is the test's: the 100 failures fall within one second however long they take here.
    let now = 0;
    bench = await startProxy(await closedPort(), { now: () => now });
    await Promise.all(
      Array.from({ length: 100 }, () =>
        send(bench!.port, { headers: { Authorization: 'Bearer sekrit-token' } }),
      ),
    );
    now = 999;
    await send(bench.port);
    now = 1_000;
    await send(bench.port);
    const warnings = bench.log.lines.filter(atLevel('warn'));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ kind: 'unreachable', suppressed: 0 });
    expect(warnings[1]).toMatchObject({ kind: 'unreachable', suppressed: 100 });
    expect(JSON.stringify(bench.log.lines)).not.toContain('sekrit-token');
  });

  it('leaves no request in flight and no upstream connection open after close()', async () => {
    const { upstream } = await start((_req, res) => res.end('ok'));
    await Promise.all(Array.from({ length: 20 }, () => send(bench!.port)));
    expect(bench!.proxy.inFlight()).toBe(0);
    bench!.proxy.close();
    await waitFor(
      () => upstream.seen.every(({ request }) => request.socket.destroyed),
      10_000,
      'upstream sockets closed',
    );
  });
});
