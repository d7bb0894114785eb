/** The user container's readiness probes run against real servers on 127.0.0.1, as KServe's agent runs them. */
import { createServer, type Server } from 'node:net';
import * as E from 'fp-ts/Either';
import { decodeReadinessProbes, type ContainerProbe, type ProbeAction } from '../../src/core/container-probe';
import { attemptProbe, containerProber } from '../../src/net/container-prober';
import { waitFor } from '../../src/testing/wait';
import { closedPort, useHttpServers } from '../helpers/http-servers';

const startServer = useHttpServers();

const http = (
  port: number,
  path = '/',
  headers: ReadonlyArray<readonly [string, string]> = [],
): ProbeAction => ({
  kind: 'http',
  scheme: 'http',
  host: '127.0.0.1',
  port,
  path,
  headers,
});

const probe = (action: ProbeAction, more: Partial<ContainerProbe> = {}): ContainerProbe => ({
  action,
  timeoutMs: 1000,
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 3,
  ...more,
});

describe('attemptProbe', () => {
  it('passes on 200 to 399 and fails on 400 and up, sending the kubelet User-Agent and the probe headers', async () => {
    const seen: Array<Record<string, unknown>> = [];
    let status = 200;
    const server = await startServer((request, response) => {
      seen.push({ url: request.url, ...request.headers });
      response.writeHead(status).end('body');
    });
    expect(
      await attemptProbe(http(server.port, '/v2/health/ready?x=1', [['K-Kubelet-Probe', 'queue']]), 1000),
    ).toBe(true);
    status = 302;
    expect(await attemptProbe(http(server.port), 1000)).toBe(true);
    status = 503;
    expect(await attemptProbe(http(server.port), 1000)).toBe(false);
    status = 404;
    expect(await attemptProbe(http(server.port), 1000)).toBe(false);
    expect(seen[0]).toMatchObject({ url: '/v2/health/ready?x=1', 'k-kubelet-probe': 'queue' });
    expect(String(seen[0]!['user-agent'])).toMatch(/^kube-probe\//);
    expect(seen[0]).not.toHaveProperty('k-network-probe');
  });

  it("follows a redirect as Go's client does (Knative's prober in KServe's agent): the last answer decides", async () => {
    const seen: string[] = [];
    const server = await startServer((request, response) => {
      const url = request.url ?? '';
      seen.push(url);
      // FastAPI's trailing-slash redirect in front of a server not ready yet; a move to a page that answers; a loop.
      if (url === '/ready/') return response.writeHead(307, { location: '/ready' }).end();
      if (url === '/ready') return response.writeHead(503).end();
      if (url === '/moved')
        return response.writeHead(302, { location: `http://127.0.0.1:${server.port}/ok` }).end();
      if (url === '/loop') return response.writeHead(302, { location: '/loop' }).end();
      if (url === '/unmodified') return response.writeHead(304).end();
      response.writeHead(200).end();
    });
    expect(await attemptProbe(http(server.port, '/ready/'), 1000)).toBe(false);
    expect(await attemptProbe(http(server.port, '/moved'), 1000)).toBe(true);
    expect(await attemptProbe(http(server.port, '/loop'), 1000)).toBe(false);
    // A 3xx that is no redirect (no Location to follow) passes, as any 3xx did.
    expect(await attemptProbe(http(server.port, '/unmodified'), 1000)).toBe(true);
    expect(seen.slice(0, 4)).toEqual(['/ready/', '/ready', '/moved', '/ok']);
    // Go's client gives up after 10 redirects: the first request and 10 more.
    expect(seen.filter((url) => url === '/loop')).toHaveLength(11);
  });

  it("takes an answer head past node:http's 16 KiB (a big cookie or trace header), failing only one past 1 MiB", async () => {
    let header = 'a'.repeat(40 * 1024);
    const server = await startServer((_request, response) => response.setHeader('X-Big', header).end('ok'));
    expect(await attemptProbe(http(server.port), 1000)).toBe(true);
    header = 'a'.repeat(2 * 1024 * 1024);
    expect(await attemptProbe(http(server.port), 5000)).toBe(false);
  });

  it('fails on a closed port and on a server that does not answer within the timeout', async () => {
    expect(await attemptProbe(http(await closedPort()), 1000)).toBe(false);
    // Only the timeout ends an attempt on a server that never answers.
    const silent = await startServer(() => undefined);
    expect(await attemptProbe(http(silent.port), 200)).toBe(false);
  });

  it('fails, never throws, a probe Node cannot send: a host that is no header value', async () => {
    const server = await startServer((_request, response) => response.writeHead(200).end());
    // It passes the probe's decoding; node:http throws on it at once, which rejected the check: the agent port's
    // handler never answered the kubelet, and its rejection reached the process's last resort as unhandled.
    const decoded = decodeReadinessProbes(
      JSON.stringify([{ httpGet: { host: '健康', path: '/', port: server.port }, periodSeconds: 10 }]),
      server.port,
    );
    if (E.isLeft(decoded)) throw new Error(decoded.left);
    for (const { action } of decoded.right) expect(await attemptProbe(action, 1000)).toBe(false);
    expect(await containerProber(decoded.right).check()).toBe(false);
  });

  it("sends a path past ASCII as Go's url.URL does (the kubelet, Knative's prober): its UTF-8 bytes percent-encoded", async () => {
    const seen: string[] = [];
    const server = await startServer((request, response) => {
      seen.push(request.url ?? '');
      response.writeHead(200).end();
    });
    // Node refused the first (past Latin-1) and sent the second's é as the one byte 0xE9: both failed the probe
    // where KServe's agent passes it.
    const decoded = decodeReadinessProbes(
      JSON.stringify([
        { httpGet: { path: '/健康', port: server.port }, periodSeconds: 10 },
        { httpGet: { path: '/café/ready?q=été', port: server.port }, periodSeconds: 10 },
      ]),
      server.port,
    );
    if (E.isLeft(decoded)) throw new Error(decoded.left);
    for (const { action } of decoded.right) expect(await attemptProbe(action, 1000)).toBe(true);
    expect(seen).toEqual(['/%E5%81%A5%E5%BA%B7', '/caf%C3%A9/ready?q=%C3%A9t%C3%A9']);
  });

  it('checks a tcpSocket by connecting', async () => {
    const listening: Server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const { port } = listening.address() as { port: number };
    expect(await attemptProbe({ kind: 'tcp', host: '127.0.0.1', port }, 1000)).toBe(true);
    await new Promise<void>((resolve) => listening.close(() => resolve()));
    expect(await attemptProbe({ kind: 'tcp', host: '127.0.0.1', port }, 1000)).toBe(false);
  });
});

describe('containerProber', () => {
  it('needs every probe to pass', async () => {
    const up = await startServer((_request, response) => response.end());
    const down = await closedPort();
    expect(await containerProber([probe(http(up.port)), probe(http(up.port))]).check()).toBe(true);
    expect(await containerProber([probe(http(up.port)), probe(http(down))]).check()).toBe(false);
  });

  it('counts a periodic probe’s passes across checks up to successThreshold; a failure starts the count again', async () => {
    let status = 200;
    const server = await startServer((_request, response) => response.writeHead(status).end());
    const prober = containerProber([probe(http(server.port), { successThreshold: 2 })]);
    expect(await prober.check()).toBe(false);
    expect(await prober.check()).toBe(true);
    status = 500;
    expect(await prober.check()).toBe(false);
    status = 200;
    expect(await prober.check()).toBe(false);
    expect(await prober.check()).toBe(true);
  });

  it('polls a probe with no period (Knative aggressive) until it passes successThreshold times in a row', async () => {
    // Not ready, ready, not ready, then ready for good: by the request, not by the clock.
    const statuses = [503, 200, 503];
    let requests = 0;
    const server = await startServer((_request, response) => {
      response.writeHead(statuses[requests++] ?? 200).end();
    });
    const passed = await containerProber([
      probe(http(server.port), { periodSeconds: 0, successThreshold: 3 }),
    ]).check();
    expect(passed).toBe(true);
    // Three passes in a row after the last failure: the 4th, 5th and 6th requests at the least (an attempt a busy
    // host times out only adds one); counting passes that were not in a row would stop at the 5th.
    expect(requests).toBeGreaterThanOrEqual(6);
  });

  it('shares one check among concurrent callers', async () => {
    let requests = 0;
    const server = await startServer((_request, response) => {
      requests++;
      setTimeout(() => response.end(), 50);
    });
    const prober = containerProber([probe(http(server.port))]);
    expect(await Promise.all([prober.check(), prober.check(), prober.check()])).toEqual([true, true, true]);
    expect(requests).toBe(1);
  });

  it('stops an aggressive poll on close, failing the check', async () => {
    let requests = 0;
    const server = await startServer((_request, response) => {
      requests++;
      response.writeHead(503).end();
    });
    const prober = containerProber([probe(http(server.port), { periodSeconds: 0 })]);
    const check = prober.check();
    await waitFor(() => requests > 0, 10_000, 'a first attempt');
    prober.close();
    const atClose = requests;
    expect(await check).toBe(false);
    // No attempt after the close but the one it may have caught on its way (the window would poll for 10 s more).
    expect(requests - atClose).toBeLessThanOrEqual(1);
  });
});
