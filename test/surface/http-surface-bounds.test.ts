/**
 * The HTTP surface cannot be starved: on 127.0.0.1 with real sockets and 10,000 models, /status is paged, the
 * probes answer while clients loop on /status, bodies are not waited for, the bind address holds, and a process
 * out of file descriptors fails its liveness.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import pino from 'pino';
import type { Subscription } from 'rxjs';
import type { ModelName } from '../../src/core/model-name';
import type { ModelStatus } from '../../src/core/model-status';
import type { StatusDocumentJson } from '../../src/core/status-document';
import { withDescriptors } from '../../src/surface/surface-state';
import { waitFor } from '../../src/testing/wait';
import {
  defaultSurfaceLimits,
  httpSurface,
  surfacePaths,
  type HttpSurfaceOptions,
  type SurfaceView,
} from '../../src/surface/http-surface';
import { statusPages } from '../../src/surface/status-pages';
import { spec } from '../helpers/fixtures';
import { openDescriptors, rawSocket } from '../helpers/raw-socket';
import { get, getJson } from '../integration/surface-kit';

let subscription: Subscription | undefined;
afterEach(() => subscription?.unsubscribe());

const modelCount = 10_000;
const statuses: ReadonlyArray<ModelStatus> = Array.from({ length: modelCount }, (_, i) => ({
  modelName: `model-${String(i).padStart(5, '0')}` as ModelName,
  phase: i % 100 === 0 ? 'Failed' : 'Loaded',
  spec: spec(`https://bucket.example/models/model-${i}/with/a/long/enough/path/model.tar.gz`),
  since: Date.UTC(2026, 0, 1),
  durationMs: 1234,
  attempts: 0,
  ...(i % 100 === 0 ? { errorKind: 'http-status', reason: 'GET answered 404', attempt: 3 } : {}),
}));

const pages = statusPages({
  statuses: () => statuses,
  status: () => undefined, // no download runs
  config: () => ({ source: 'config-dir' }),
  ready: () => true,
});
const view: SurfaceView = {
  liveness: () => ({ ok: true }),
  ready: () => true,
  statusPage: pages.page,
  modelStatus: pages.model,
  metrics: () => Promise.resolve({ contentType: 'text/plain', text: 'm 1\n' }),
};

const serve = (options: Partial<HttpSurfaceOptions> = {}): Promise<number> =>
  new Promise((resolve, reject) => {
    subscription = httpSurface({
      port: 0,
      host: '127.0.0.1',
      view,
      log: pino({ level: 'silent' }),
      ...options,
    }).subscribe({ next: (address) => resolve(address.port), error: reject });
  });

describe('httpSurface under load', () => {
  it('pages /status at 10,000 models: each page bounded, a summary of all, `next` walks every model once', async () => {
    const port = await serve();
    const first = await get(port, surfacePaths.status);
    const document = JSON.parse(first.body) as StatusDocumentJson;
    expect(document.models).toHaveLength(defaultSurfaceLimits.statusPageSize);
    expect(Buffer.byteLength(first.body)).toBeLessThan(512 * 1024);
    expect(document.summary).toEqual({ models: modelCount, phases: { Loaded: 9900, Failed: 100 } });
    const seen: string[] = [];
    for (let after: string | undefined = ''; after !== undefined;) {
      const query: string = after === '' ? '?limit=2000' : `?limit=2000&after=${encodeURIComponent(after)}`;
      const { json } = await getJson<StatusDocumentJson>(port, `${surfacePaths.status}${query}`);
      expect(json.models.length).toBeLessThanOrEqual(defaultSurfaceLimits.statusPageSize); // the limit is capped
      seen.push(...json.models.map((model) => model.model));
      after = json.page.next;
    }
    expect(seen).toEqual(statuses.map((status) => status.modelName));
    const failed = await getJson<StatusDocumentJson>(port, `${surfacePaths.status}?phase=Failed&limit=1000`);
    expect(failed.json.models.map((model) => model.phase)).toEqual(Array(100).fill('Failed'));
    expect((await get(port, `${surfacePaths.status}?limit=zero`)).status).toBe(400);
    expect((await get(port, `${surfacePaths.status}?phase=Nowhere`)).status).toBe(400);
  });

  // How fast they answer under load is a speed claim: the soak tier times it (surface-scale.soak.test.ts).
  it('answers /healthz and /readyz 200, and never 503 (busy), while 16 clients loop on /status of 10,000 models', async () => {
    const port = await serve();
    let looping = true;
    const answers: number[] = [];
    const loop = async (): Promise<void> => {
      while (looping) answers.push((await get(port, surfacePaths.status)).status);
    };
    const clients = Array.from({ length: 16 }, loop);
    const probes: Array<{ status: number; ms: number }> = [];
    for (let i = 0; i < 20; i++)
      for (const path of [surfacePaths.healthz, surfacePaths.readyz]) probes.push(await get(port, path));
    looping = false;
    await Promise.all(clients);
    expect(probes.map((probe) => probe.status)).toEqual(Array(probes.length).fill(200));
    expect(answers.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(answers.every((status) => status === 200 || status === 503)).toBe(true); // 503: busy, Retry-After
  });

  it('answers a request with a body at once, not waiting for the body, and closes once the body stops coming', async () => {
    const port = await serve();
    const post = await rawSocket(port);
    post.socket.write('POST /status HTTP/1.1\r\nHost: test\r\nContent-Length: 1000000\r\n\r\nab');
    const get = await rawSocket(port);
    get.socket.write('GET /healthz HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n');
    const answered = (client: typeof post): boolean => client.received().endsWith('}');
    await waitFor(() => answered(post) && answered(get), 10_000, 'both answers, before the bodies');
    expect(post.received()).toMatch(/^HTTP\/1\.1 405[^]*\r\nConnection: close\r\n/i);
    expect(get.received()).toMatch(/^HTTP\/1\.1 413[^]*\r\nConnection: close\r\n/i);
    // Neither client sends more: each connection is closed (after the linger's quiet spell), not held for the body.
    await Promise.all([post.closed, get.closed]);
  });

  it('listens only on the address it is given (127.0.0.2 reaches it only when every interface is bound)', async () => {
    const port = await serve({ host: '127.0.0.1' });
    await expect(rawSocket(port, '127.0.0.2')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    subscription?.unsubscribe();
    const everywhere = await serve({ port, host: undefined });
    const client = await rawSocket(everywhere, '127.0.0.2');
    client.socket.destroy();
  });

  it('fails /healthz with 503 while the process is out of file descriptors, and recovers once it is not', async () => {
    const port = await serve({ view: { ...view, liveness: withDescriptors(() => ({ ok: true })) } });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const probe = (): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const request = httpGet(
          { port, host: '127.0.0.1', path: surfacePaths.healthz, agent },
          (response) => {
            let body = '';
            response.on('data', (chunk: Buffer) => (body += chunk.toString()));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          },
        );
        request.on('error', reject);
      });
    expect((await probe()).status).toBe(200); // the connection the next probe reuses
    const nofile = (value?: string): string =>
      execFileSync('prlimit', [
        '--pid',
        String(process.pid),
        value === undefined ? '--nofile' : `--nofile=${value}`,
        '--output=SOFT,HARD',
        '--noheadings',
        '--raw',
      ]).toString();
    const [soft, hard] = nofile().trim().split(/\s+/);
    const held: number[] = [];
    let exhausted: { status: number; body: string };
    nofile(`${openDescriptors() + 16}:${hard}`);
    try {
      for (;;) held.push(openSync('/dev/null', 'r')); // until EMFILE
    } catch {
      exhausted = await probe();
    } finally {
      for (const fd of held.splice(0)) closeSync(fd);
      nofile(`${soft}:${hard}`);
    }
    expect([exhausted.status, JSON.parse(exhausted.body)]).toEqual([
      503,
      {
        status: 'stalled',
        ok: false,
        reason: 'the process cannot open a file: out of file descriptors (EMFILE)',
      },
    ]);
    expect((await probe()).status).toBe(200);
    agent.destroy();
  });
});
