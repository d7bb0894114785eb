/** Tests of v2ModelServer against the V2 stand-in and a few hand-rolled servers, over real HTTP on 127.0.0.1. */
import { join } from 'node:path';
import type { ModelName } from '../../src/core/model-name';
import { v2ModelServer } from '../../src/model-server/v2';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import type { HttpHandler } from '../../src/testing/http-server';
import { effectError } from '../helpers/effect-error';
import { writeFiles } from '../helpers/file-tree';
import { useHttpServers } from '../helpers/http-servers';
import { trickle } from '../helpers/raw-http';
import { useTempDir } from '../helpers/temp-dir';
import { sleep } from '../../src/testing/wait';

const name = (s: string): ModelName => s as ModelName;
const live = (): AbortSignal => new AbortController().signal;

const answer =
  (status: number, body: string): HttpHandler =>
  (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(status, { 'Content-Type': 'application/json' }).end(body));
  };

describe('v2ModelServer', () => {
  const modelDir = useTempDir('v2');
  /** A one-off server for answers the stand-in never gives (bad bodies, hangs, 5xx). */
  const startRaw = useHttpServers();
  let standIn: V2ModelServerStandIn;

  beforeEach(async () => {
    standIn = await startV2ModelServer({ modelDir: modelDir.path });
  });
  afterEach(() => standIn.close());

  const install = (model: string): Promise<void> =>
    writeFiles(join(modelDir.path, model), { 'SUCCESS.abc': '' });

  it('loads a model with POST .../load, body {} and Content-Type application/json', async () => {
    await install('m1');
    const bodies: string[] = [];
    const headers: Array<string | undefined> = [];
    const spy = await startRaw((req, res) => {
      headers.push(req.headers['content-type']);
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(`${req.method} ${req.url} ${body}`);
        res.writeHead(200).end();
      });
    });
    await v2ModelServer({ baseUrl: spy.url }).load(name('m1'), false, live());
    expect(bodies).toEqual(['POST /v2/repository/models/m1/load {}']);
    expect(headers).toEqual(['application/json']);
    await v2ModelServer({ baseUrl: standIn.url }).load(name('m1'), false, live());
    expect([...standIn.loaded]).toEqual(['m1']);
  });

  it('percent-encodes the model name in the path', async () => {
    await install('a b#ü');
    await v2ModelServer({ baseUrl: `${standIn.url}/` }).load(name('a b#ü'), false, live());
    expect(standIn.requests[0]?.path).toBe('/v2/repository/models/a%20b%23%C3%BC/load');
    expect(standIn.loaded.has('a b#ü')).toBe(true);
  });

  it('sends each API path below a server URL that has a query (a token for a proxy before the server), keeping it', async () => {
    // The path was appended to the URL's text, so it went into the query: every call asked `/` and got a 404 for good.
    const asked: string[] = [];
    const root = await startRaw((req, res) => {
      asked.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
    });
    const server = v2ModelServer({ baseUrl: `${root.url}/prefix/?access_token=t&x=1#part`, kind: 'generic' });
    await server.load(name('m'), false, live());
    await server.loadedModels(live());
    expect(asked).toEqual([
      '/prefix/v2/repository/models/m/load?access_token=t&x=1',
      '/prefix/v2/repository/index?access_token=t&x=1',
    ]);
  });

  it('reloads a loaded model in place when replacing', async () => {
    await install('m1');
    const server = v2ModelServer({ baseUrl: standIn.url });
    await server.load(name('m1'), false, live());
    await server.load(name('m1'), true, live());
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v2/repository/models/m1/load',
      'POST /v2/repository/models/m1/load',
    ]);
  });

  it('unloads a loaded model', async () => {
    standIn.preload('m1');
    await v2ModelServer({ baseUrl: standIn.url }).unload(name('m1'), live());
    expect(standIn.loaded.size).toBe(0);
  });

  it('counts an unload the server answers 404 (model unknown) as done', async () => {
    await expect(
      v2ModelServer({ baseUrl: standIn.url }).unload(name('ghost'), live()),
    ).resolves.toBeUndefined();
    expect(standIn.requests.map((r) => r.name)).toEqual(['ghost']);
  });

  it("does not count an unload answered 404 with an HTML page (a proxy's, not the server's) as done", async () => {
    const raw = await startRaw((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(404, { 'Content-Type': 'text/html' }).end('<html>404 Not Found</html>'),
      );
    });
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).unload(name('m1'), live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 404 });
  });

  it('lists the READY models of the index, ignoring the others', async () => {
    await install('m1');
    await install('m2');
    standIn.preload('m3');
    const server = v2ModelServer({ baseUrl: standIn.url });
    await server.load(name('m1'), false, live());
    const loaded = await server.loadedModels(live());
    expect([...loaded].sort()).toEqual(['m1', 'm3']);
  });

  it('reads an index entry whose state is no string (null, a number) as not loaded, reading the others', async () => {
    const index = [
      { name: 'm1', state: 'READY' },
      { name: 'lost+found', state: null },
      { name: 'm3', state: 7 },
      { name: 'm2', state: 'READY' },
    ];
    const raw = await startRaw(answer(200, JSON.stringify(index)));
    const loaded = await v2ModelServer({ baseUrl: raw.url }).loadedModels(live());
    expect([...loaded].sort()).toEqual(['m1', 'm2']);
  });

  it('answers each index read as the index is now, when it repeats and when it changes', async () => {
    await install('m1');
    await install('m2');
    const server = v2ModelServer({ baseUrl: standIn.url });
    await server.load(name('m1'), false, live());
    expect([...(await server.loadedModels(live()))]).toEqual(['m1']);
    expect([...(await server.loadedModels(live()))]).toEqual(['m1']);
    await server.load(name('m2'), false, live());
    expect([...(await server.loadedModels(live()))].sort()).toEqual(['m1', 'm2']);
    await server.unload(name('m1'), live());
    expect([...(await server.loadedModels(live()))]).toEqual(['m2']);
  });

  it('reads Ready (KServe) and READY alike, tolerates extra fields and lists a multi-version model once', async () => {
    const raw = await startRaw(
      answer(
        200,
        JSON.stringify([
          { name: 'kserve', state: 'Ready', extra: { x: 1 } },
          { name: 'triton', version: '1', state: 'READY', reason: '' },
          { name: 'triton', version: '2', state: 'UNAVAILABLE', reason: 'unloaded' },
          { name: 'loading', state: 'LOADING' },
          { name: 'notready', state: 'NotReady' },
        ]),
      ),
    );
    const loaded = await v2ModelServer({ baseUrl: raw.url }).loadedModels(live());
    expect([...loaded].sort()).toEqual(['kserve', 'triton']);
  });

  it('bounds the reading of an answer that trickles by the call timeout: a load answered 200 is done, an index read fails', async () => {
    await install('m1');
    // A byte every 100 ms for a minute, each under the timeout between two bytes.
    const raw = await startRaw(trickle(Buffer.from(' '), 100, 600));
    const server = v2ModelServer({ baseUrl: raw.url, timeoutMs: 500 });
    const settled = (call: Promise<unknown>): Promise<unknown> =>
      Promise.race([
        call.then(
          () => 'resolved',
          (error: unknown) => error,
        ),
        sleep(20_000).then(() => 'still reading after 20 s'),
      ]);
    expect(await settled(server.load(name('m1'), false, live()))).toBe('resolved');
    expect(await settled(server.loadedModels(live()))).toMatchObject({ retryable: true, kind: 'timeout' });
    const refusing = await startRaw((req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' }).write('busy');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    });
    const refused = v2ModelServer({ baseUrl: refusing.url, timeoutMs: 500 }).load(name('m1'), false, live());
    expect(await settled(refused)).toMatchObject({ retryable: true, kind: 'http-status', status: 503 });
  });

  it("bounds the reading of a load's error body by the network's rule for error bodies, not by the load timeout", async () => {
    await install('m1');
    // A proxy before the server trickling a 503's body: each byte well within the timeout between two bytes.
    const refusing = await startRaw((req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' }).write('busy');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    });
    // A load may take 5 minutes to be answered; its failure's words are not worth waiting that long for.
    const server = v2ModelServer({ baseUrl: refusing.url, timeoutMs: 500, loadTimeoutMs: 300_000 });
    const refused = server.load(name('m1'), false, live()).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    const settled = await Promise.race([refused, sleep(60_000).then(() => 'still reading after 60 s')]);
    expect(settled).toMatchObject({ retryable: true, kind: 'http-status', status: 503 });
  });

  it("treats an entry without a state as not loaded (Triton's dirs it never loaded), and skips names no model has", async () => {
    const raw = await startRaw(
      answer(
        200,
        JSON.stringify([
          { name: '.tmp-m1-0a1b2c' },
          { name: 'lost+found' },
          { name: 'never-loaded' },
          { name: '.old-m1-3d4e5f', version: '1', state: 'READY' },
          { name: 'm1', version: '1', state: 'READY' },
        ]),
      ),
    );
    const loaded = await v2ModelServer({ baseUrl: raw.url }).loadedModels(live());
    expect([...loaded]).toEqual(['m1']);
  });

  it.each([
    ['not JSON', '<html>oops</html>', /not JSON/],
    ['not a list', '{"models": []}', /not a list of \{name, state\?\}/],
    ['entries without a name', '[{"state": "READY"}]', /not a list of \{name, state\?\}/],
  ])('fails retryably when the index body is %s', async (_label, body, message) => {
    const raw = await startRaw(answer(200, body));
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).loadedModels(live()));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(error.message).toMatch(message);
    expect(error.message).toContain('model server index');
  });

  it('fails retryably when the server answers 503, with its error text', async () => {
    await install('m1');
    standIn.failNextLoads(1, 503);
    const error = await effectError(v2ModelServer({ baseUrl: standIn.url }).load(name('m1'), false, live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 503, retryable: true });
    expect(error.message).toBe(
      `model server load of "m1" (${standIn.url}) returned HTTP 503: injected failure: load of 'm1' failed`,
    );
  });

  it('fails retryably on 429 and 500', async () => {
    await install('m1');
    for (const status of [429, 500]) {
      standIn.failNextLoads(1, status);
      const error = await effectError(
        v2ModelServer({ baseUrl: standIn.url }).load(name('m1'), false, live()),
      );
      expect(error).toMatchObject({ kind: 'http-status', status, retryable: true });
    }
  });

  it('carries the wait a 429 or 503 asks for in its Retry-After, on a load, an unload and the index', async () => {
    await install('m1');
    standIn.preload('m2');
    const server = v2ModelServer({ baseUrl: standIn.url });
    for (const [route, retryAfter, call] of [
      ['load', '7', () => server.load(name('m1'), false, live())],
      ['unload', '3', () => server.unload(name('m2'), live())],
      ['index', '5', () => server.loadedModels(live())],
    ] as const) {
      standIn.injectFault(route, {
        status: route === 'load' ? 429 : 503,
        headers: { 'Retry-After': retryAfter },
      });
      const error = await effectError(call());
      expect(error).toMatchObject({
        kind: 'http-status',
        retryable: true,
        retryAfterMs: Number(retryAfter) * 1000,
      });
    }
  });

  it('fails permanently when a load is answered 400, with the server error text', async () => {
    // No files in the model dir: the stand-in refuses the load like Triton would.
    const error = await effectError(v2ModelServer({ baseUrl: standIn.url }).load(name('m1'), false, live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 400, retryable: false });
    expect(error.message).toContain("HTTP 400: failed to load 'm1': no model files");
  });

  it("says a load answered 403 was refused by whatever checks the call's credentials, not for the model's files", async () => {
    // oauth2-proxy's page before the server: nothing of the model; set right, the same files load.
    const raw = await startRaw((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(403, { 'Content-Type': 'text/html' }).end('<html>Forbidden</html>'));
    });
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).load(name('m1'), false, live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).toContain('HTTP 403: <html>Forbidden</html>');
    expect(error.message).toMatch(/refused the call itself: check the credentials.*not the model's files/);
  });

  it("does not take a load or an unload answered 200 with an HTML page (a proxy's login page) as done", async () => {
    const raw = await startRaw((req, res) => {
      req.resume();
      req.on('end', () =>
        res
          .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
          .end('<html><form>Sign in</form></html>'),
      );
    });
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).load(name('m1'), false, live()));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(error.message).toContain('HTML page');
    // Nor an unload as done: its files would be deleted while the server may still hold them.
    const unload = await effectError(v2ModelServer({ baseUrl: raw.url }).unload(name('m1'), live()));
    expect(unload).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(unload.message).toContain('HTML page');
  });

  it("retries a load answered 4xx with an HTML page: a proxy's (an ingress's 404 page), no refusal of the model's files", async () => {
    const raw = await startRaw((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(404, { 'Content-Type': 'text/html' }).end('<html>404 Not Found</html>'),
      );
    });
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).load(name('m1'), false, live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 404, retryable: true });
    expect(error.message).toContain('HTML page');
  });

  it('fails permanently when a load is answered 404 (MLServer: no such model)', async () => {
    standIn.failNextLoads(1, 404);
    await install('m1');
    const error = await effectError(v2ModelServer({ baseUrl: standIn.url }).load(name('m1'), false, live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 404, retryable: false });
  });

  it('fails when an unload is answered with an error other than 404', async () => {
    const raw = await startRaw(answer(500, '{"error": "boom"}'));
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).unload(name('m1'), live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 500, retryable: true });
    expect(error.message).toContain('HTTP 500: boom');
  });

  it('fails retryably when a load takes longer than the timeout', async () => {
    await install('m1');
    standIn.setLoadDelay(2_000);
    // An error at all: the load itself would succeed after its delay.
    const error = await effectError(
      v2ModelServer({ baseUrl: standIn.url, timeoutMs: 100 }).load(name('m1'), false, live()),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toBe(`model server load of "m1" (${standIn.url}) timed out after 100 ms`);
  });

  it('times out a response whose body never ends', async () => {
    const raw = await startRaw((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('[{"name": "m1", ');
    });
    const error = await effectError(v2ModelServer({ baseUrl: raw.url, timeoutMs: 100 }).loadedModels(live()));
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('timed out after 100 ms');
  });

  it('fails retryably when the connection is refused', async () => {
    const raw = await startRaw(answer(200, '[]'));
    await raw.close();
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).loadedModels(live()));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toMatch(/model server index .* failed: .*ECONNREFUSED/);
  });

  it('fails retryably when the server resets the connection', async () => {
    const raw = await startRaw((req) => req.socket.destroy());
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).unload(name('m1'), live()));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toContain('model server unload of "m1"');
  });

  it('stops a load at once when the caller aborts', async () => {
    await install('m1');
    standIn.setLoadDelay(5_000);
    const controller = new AbortController();
    // An error at all: the load itself would succeed after its delay.
    const pending = effectError(
      v2ModelServer({ baseUrl: standIn.url }).load(name('m1'), false, controller.signal),
    );
    setTimeout(() => controller.abort(), 50);
    const error = await pending;
    expect(error).toMatchObject({ kind: 'aborted', retryable: true });
    expect(error.message).toBe(`model server load of "m1" (${standIn.url}) aborted`);
  });

  it('does not send a request when the signal is already aborted', async () => {
    const error = await effectError(
      v2ModelServer({ baseUrl: standIn.url }).loadedModels(AbortSignal.abort()),
    );
    expect(error).toMatchObject({ kind: 'aborted', retryable: true });
    expect(standIn.requests).toHaveLength(0);
  });

  it('fails permanently when the base URL is not an http(s) URL', async () => {
    const error = await effectError(v2ModelServer({ baseUrl: 'localhost:8000' }).loadedModels(live()));
    expect(error).toMatchObject({ kind: 'unsupported-scheme', retryable: false });
  });

  it.each([
    ['user info', 'http://admin:secret@127.0.0.1:8000', 'invalid-uri'],
    ['a bad URL', 'http://[::1/?token=secret', 'invalid-uri'],
  ])('fails permanently on a base URL with %s, without repeating its secret', async (_l, baseUrl, kind) => {
    const error = await effectError(v2ModelServer({ baseUrl }).loadedModels(live()));
    expect(error).toMatchObject({ kind, retryable: false });
    expect(error.message).not.toContain('secret');
  });

  it('fails retryably when the index is larger than a body may be', async () => {
    const raw = await startRaw(answer(200, `[${'{"name":"m","state":"READY"},'.repeat(600_000)}{}]`));
    const error = await effectError(v2ModelServer({ baseUrl: raw.url }).loadedModels(live()));
    expect(error).toMatchObject({ kind: 'too-large', retryable: true });
  });
});
