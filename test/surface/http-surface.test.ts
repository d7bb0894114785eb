/** httpSurface on 127.0.0.1 over a hand-made view, the surface state's liveness on a hand-moved clock, and the status document. */
import pino from 'pino';
import { firstValueFrom, type Subscription } from 'rxjs';
import { registerSecret } from '../../src/core/redact';
import type { ModelStatus } from '../../src/core/model-status';
import {
  modelStatusJson,
  shownStatuses,
  statusDocumentText,
  statusSummary,
} from '../../src/core/status-document';
import {
  defaultSurfaceLimits,
  httpSurface,
  surfacePaths,
  type SurfaceView,
} from '../../src/surface/http-surface';
import { statusPages } from '../../src/surface/status-pages';
import { createSurfaceState } from '../../src/surface/surface-state';
import { name, spec } from '../helpers/fixtures';
import { get } from '../integration/surface-kit';
import { getHead, rawSocket } from '../helpers/raw-socket';

let subscription: Subscription | undefined;
afterEach(() => subscription?.unsubscribe());

const token = 'tok-surface-unit-0123456789';
registerSecret(token);

const failed: ModelStatus = {
  modelName: name('ghost'),
  phase: 'Failed',
  spec: spec(`https://user:pw123456@host/models/ghost.tgz?X-Amz-Signature=abcdef0123456789`),
  errorKind: 'http-status',
  reason: `GET https://host/models/ghost.tgz answered 403 (${token})`,
  attempt: 3,
  since: Date.UTC(2026, 0, 2, 3, 4, 5),
  durationMs: 12,
};

const view = (overrides: Partial<SurfaceView> = {}): SurfaceView => ({
  liveness: () => ({ ok: true }),
  ready: () => false,
  statusPage: (query) =>
    statusDocumentText([failed], statusSummary([failed]), { source: 'config-dir' }, false, query),
  modelStatus: (model) => (model === 'ghost' ? modelStatusJson(failed) : undefined),
  metrics: () => Promise.resolve({ contentType: 'text/plain; version=0.0.4', text: `m{t="${token}"} 1\n` }),
  ...overrides,
});

const silent = pino({ level: 'silent' });

/** Serves `surfaceView` on a free port until the test ends; resolves with the port. */
const serve = (surfaceView: SurfaceView): Promise<number> =>
  new Promise((resolve, reject) => {
    subscription = httpSurface({ port: 0, host: '127.0.0.1', view: surfaceView, log: silent }).subscribe({
      next: (address) => resolve(address.port),
      error: reject,
    });
  });

describe('httpSurface', () => {
  it('answers /healthz and /readyz from the view: 200 or 503 with a JSON body', async () => {
    const port = await serve(view({ liveness: () => ({ ok: false, reason: 'stuck' }), ready: () => true }));
    const healthz = await get(port, surfacePaths.healthz);
    const readyz = await get(port, surfacePaths.readyz);
    expect([healthz.status, JSON.parse(healthz.body)]).toEqual([
      503,
      { status: 'stalled', ok: false, reason: 'stuck' },
    ]);
    expect([readyz.status, JSON.parse(readyz.body)]).toEqual([200, { status: 'ready', ready: true }]);
  });

  it('serves /status and /status/<model> without credentials, and 404 for an unknown model or path', async () => {
    const port = await serve(view());
    const all = await get(port, surfacePaths.status);
    const one = await get(port, '/status/ghost');
    expect(JSON.parse(one.body)).toEqual({
      model: 'ghost',
      phase: 'Failed',
      since: '2026-01-02T03:04:05.000Z',
      spec: { storageUri: 'https://host/models/ghost.tgz', framework: 'sklearn' },
      attempts: 3,
      error: { kind: 'http-status', reason: 'GET https://host/models/ghost.tgz answered 403 ([REDACTED])' },
      durationMs: 12,
    });
    expect(JSON.parse(all.body)).toEqual(
      JSON.parse(
        statusDocumentText(
          shownStatuses([failed]),
          statusSummary([failed]),
          { source: 'config-dir' },
          false,
          {
            limit: defaultSurfaceLimits.statusPageSize,
          },
        ),
      ),
    );
    expect(JSON.parse(all.body)).toMatchObject({ ready: false, models: [JSON.parse(one.body)] });
    for (const body of [all.body, one.body])
      expect(body).not.toMatch(/pw123456|abcdef0123456789|tok-surface/);
    expect((await get(port, '/status/nobody')).status).toBe(404);
    expect((await get(port, '/status/%E0%A4%A')).status).toBe(404);
    expect((await get(port, '/nothing')).status).toBe(404);
  });

  // A name redaction changes (`token=…`) showed as `token=[REDACTED]` in `page.next` too, which sorts before every
  // `token=<letter>`: a client following `next` got the same page for ever (found by a probe).
  it('walks every model once by `page.next`, names that redaction changes among them, and refuses a cursor no page gave', async () => {
    const names = ['a', 'token=alpha1', 'token=beta22', `x ${token}`, 'zeta'];
    const statuses = names.map((model) => ({ ...failed, modelName: name(model) }));
    const pages = statusPages({
      statuses: () => statuses,
      status: () => undefined, // no download runs
      config: () => ({ source: 'config-dir' }),
      ready: () => true,
    });
    const port = await serve(view({ statusPage: pages.page }));
    const seen: string[] = [];
    let after: string | undefined = '';
    for (let pages = 0; after !== undefined && pages < 10; pages++) {
      const query: string = after === '' ? '' : `&after=${encodeURIComponent(after)}`;
      const answer = await get(port, `${surfacePaths.status}?limit=1${query}`);
      const page = JSON.parse(answer.body) as { models: Array<{ model: string }>; page: { next?: string } };
      seen.push(...page.models.map((model) => model.model));
      after = page.page.next;
      // Nothing the redaction hid shows in a cursor, in hex either.
      for (const hidden of ['tok-surface', 'alpha1', 'beta22'])
        for (const form of [hidden, Buffer.from(hidden).toString('hex')])
          expect(answer.body).not.toContain(form);
    }
    expect(seen).toEqual(['a', 'token=[REDACTED]', 'token=[REDACTED]', 'x [REDACTED]', 'zeta']);
    expect((await get(port, `${surfacePaths.status}?after=${encodeURIComponent('\u0000zz')}`)).status).toBe(
      400,
    );
    expect((await get(port, `${surfacePaths.status}?after=token%3Dbeta22`)).status).toBe(200); // a name still is one
  });

  it('answers a request target no URL can be made of (`GET //`) with a 404, not a throw in its handler', async () => {
    const port = await serve(view());
    for (const target of ['//', '///x', '//[']) {
      const client = await rawSocket(port);
      client.socket.write(getHead(target, 'Connection: close\r\n'));
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 404 .*"error":"no such path"/s);
    }
  });

  it('serves /metrics with its content type, through the redaction too', async () => {
    const port = await serve(view());
    const response = await fetch(`http://127.0.0.1:${port}${surfacePaths.metrics}`);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4');
    expect(await response.text()).toBe('m{t="[REDACTED]"} 1\n');
  });

  it('answers HEAD without a body, other methods with 405, and a failing view with 500', async () => {
    const port = await serve(view({ metrics: () => Promise.reject(new Error('collect failed')) }));
    const head = await fetch(`http://127.0.0.1:${port}${surfacePaths.readyz}`, { method: 'HEAD' });
    expect([head.status, await head.text()]).toEqual([503, '']);
    const post = await fetch(`http://127.0.0.1:${port}${surfacePaths.status}`, { method: 'POST' });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect((await get(port, surfacePaths.metrics)).status).toBe(500);
  });

  it('errors when the port is taken, and frees it on unsubscribe', async () => {
    const port = await serve(view());
    const second = httpSurface({ port, host: '127.0.0.1', view: view(), log: silent });
    await expect(firstValueFrom(second)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    subscription?.unsubscribe();
    await expect(firstValueFrom(second)).resolves.toMatchObject({ port });
  });
});

describe('createSurfaceState', () => {
  const stateAt = () => {
    let now = 1_000_000;
    const clock = () => now;
    const state = createSurfaceState({ stallMs: 1000, source: 'config-dir', now: clock, wallNow: clock });
    return { state, advance: (ms: number) => void (now += ms) };
  };

  it('judges the watch only once it started, and only by the time since its last progress', () => {
    const { state, advance } = stateAt();
    advance(5000);
    expect(state.liveness()).toEqual({ ok: true }); // waiting for the model server: not watching yet
    state.telemetry.watcherAlive();
    advance(1000);
    expect(state.liveness()).toEqual({ ok: true });
    advance(1);
    expect(state.liveness()).toEqual({
      ok: false,
      reason: 'the config watch has made no progress for 1001 ms while the config dir exists',
    });
    state.telemetry.watcherAlive();
    expect(state.liveness()).toEqual({ ok: true });
  });

  it('judges liveness on a clock that never steps: the wall clock set forward an hour is no stall', () => {
    jest.useFakeTimers();
    try {
      const state = createSurfaceState({ stallMs: 1000, source: 'config-dir' });
      const beating = state.heartbeat$.subscribe();
      state.telemetry.watcherAlive();
      const hourAhead = Date.now() + 3_600_000;
      jest.setSystemTime(hourAhead); // NTP steps the wall clock; performance.now() does not move
      expect(state.liveness()).toEqual({ ok: true });
      state.telemetry.configRead('accepted', { checksum: 'abc' });
      expect(state.config().lastAccepted?.at).toBe(hourAhead); // /status shows the wall clock's time
      beating.unsubscribe();
    } finally {
      jest.useRealTimers();
    }
  });

  it('reports an event loop that has not turned for the threshold', () => {
    const { state, advance } = stateAt();
    subscription = state.heartbeat$.subscribe(); // beats once at once, then on a real timer
    advance(1500);
    expect(state.liveness()).toEqual({ ok: false, reason: 'the event loop has not turned for 1500 ms' });
  });

  it('holds readiness once marked, and keeps the last accepted and rejected reads', () => {
    const { state, advance } = stateAt();
    expect(state.ready()).toBe(false);
    state.markReady();
    state.telemetry.configRead('accepted', { checksum: 'abc' });
    advance(10);
    state.telemetry.configRead('rejected', { reason: 'bad memory' });
    state.telemetry.configRead('unchanged');
    expect(state.ready()).toBe(true);
    expect(state.config()).toEqual({
      source: 'config-dir',
      lastAccepted: { at: 1_000_000, checksum: 'abc' },
      lastRejected: { at: 1_000_010, reason: 'bad memory' },
    });
  });
});
