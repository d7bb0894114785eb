/** Tests of torchServeModelServer against a TorchServe management API stand-in over real HTTP on 127.0.0.1. */
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import fsPromises, { open, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import type { ModelName } from '../../src/core/model-name';
import { torchServeModelServer } from '../../src/model-server/torchserve';
import { startTorchServeStandIn, type TorchServeStandIn } from '../../src/testing/torchserve-stand-in';
import { effectError } from '../helpers/effect-error';
import { useHttpServers } from '../helpers/http-servers';
import { useTempDir } from '../helpers/temp-dir';

const name = (s: string): ModelName => s as ModelName;
const live = (): AbortSignal => new AbortController().signal;

const keyFile = (management: string): string =>
  JSON.stringify({
    management: { key: management, 'expiration time': '2030-01-01T00:00:00Z' },
    inference: { key: 'inference-key', 'expiration time': '2030-01-01T00:00:00Z' },
    API: { key: 'api-key' },
  });

describe('torchServeModelServer', () => {
  let standIn: TorchServeStandIn;
  const tmp = useTempDir('torchserve');
  /** A one-off server for answers the stand-in never gives. */
  const startRaw = useHttpServers();

  beforeEach(async () => {
    standIn = await startTorchServeStandIn();
  });
  afterEach(async () => {
    await standIn.close();
  });

  it('registers a model from its model-store directory with one worker, synchronously', async () => {
    await torchServeModelServer({ baseUrl: standIn.url }).load(name('resnet'), false, live());
    expect(standIn.registered.has('resnet')).toBe(true);
    const [request] = standIn.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/models');
    expect(Object.fromEntries(request?.query ?? [])).toEqual({
      url: 'resnet',
      model_name: 'resnet',
      initial_workers: '1',
      synchronous: 'true',
    });
    expect(request?.authorization).toBeUndefined();
  });

  it('fails a call retryably within the request timeout when its token file read hangs (a hung mount), and reads it once at a time', async () => {
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, keyFile('key-1'));
    const stat = fsPromises.stat as (...args: unknown[]) => Promise<unknown>;
    let release = (): void => undefined;
    const hung = new Promise<void>((resolve) => (release = resolve));
    let reads = 0;
    // The read of the token file hangs, as on a hung Secret mount: held, it would hold the load slot for good.
    const spy = jest.spyOn(fsPromises, 'stat').mockImplementation((async (
      path: string,
      ...rest: unknown[]
    ) => {
      if (String(path) === tokenFile) {
        reads++;
        await hung;
      }
      return stat(path, ...rest);
    }) as never);
    try {
      const server = torchServeModelServer({ baseUrl: standIn.url, tokenFile, timeoutMs: 200 });
      for (let call = 0; call < 2; call++) {
        const error = await effectError(server.load(name('m'), false, live()));
        expect(error).toMatchObject({ kind: 'timeout', retryable: true });
        expect(error.message).toContain(tokenFile);
      }
      // The read under way stays the only one: a hung mount does not take one more thread per call.
      expect(reads).toBe(1);
      expect(standIn.requests).toEqual([]);
      release();
      await server.load(name('m'), false, live());
      expect(standIn.registered.has('m')).toBe(true);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  it("keeps the server URL's query beside each call's own", async () => {
    const asked: string[] = [];
    const root = await startRaw((req, res) => {
      asked.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"models": []}'));
    });
    const server = torchServeModelServer({ baseUrl: `${root.url}?access_token=t` });
    await server.unload(name('m'), live());
    await server.loadedModels(live());
    expect(asked).toEqual(['/models/m?access_token=t', '/models?access_token=t&limit=100']);
  });

  it('counts 409 (already registered) as loaded when not replacing', async () => {
    standIn.preload('resnet');
    await torchServeModelServer({ baseUrl: standIn.url }).load(name('resnet'), false, live());
    expect(standIn.requests.map((r) => r.method)).toEqual(['POST']);
  });

  it('unregisters, then registers, when replacing', async () => {
    standIn.preload('resnet');
    await torchServeModelServer({ baseUrl: standIn.url }).load(name('resnet'), true, live());
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'DELETE /models/resnet',
      'POST /models',
    ]);
    expect(standIn.registered.has('resnet')).toBe(true);
  });

  it('registers when replacing a model TorchServe does not have (DELETE 404)', async () => {
    await torchServeModelServer({ baseUrl: standIn.url }).load(name('resnet'), true, live());
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'DELETE /models/resnet',
      'POST /models',
    ]);
  });

  it('fails retryably when a register right after the unregister for a replacement is answered 409', async () => {
    standIn.failNext('POST', 1, 409, 'Model version 1.0 is already registered for model resnet');
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url }).load(name('resnet'), true, live()),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 409, retryable: true });
    expect(error.message).toContain('already registered');
  });

  it('fails permanently on 400 and retryably on 500, with TorchServe message text', async () => {
    const server = torchServeModelServer({ baseUrl: standIn.url });
    standIn.failNext('POST', 1, 400, 'Parameter url is invalid');
    const bad = await effectError(server.load(name('resnet'), false, live()));
    expect(bad).toMatchObject({ kind: 'http-status', status: 400, retryable: false });
    expect(bad.message).toBe(
      `TorchServe register of "resnet" (${standIn.url}) returned HTTP 400: Parameter url is invalid`,
    );
    standIn.failNext('POST', 1, 500, 'Error while creating workers');
    const busy = await effectError(server.load(name('resnet'), false, live()));
    expect(busy).toMatchObject({ kind: 'http-status', status: 500, retryable: true });
    expect(busy.message).toContain('Error while creating workers');
  });

  it('unregisters a model with DELETE /models/{name}', async () => {
    standIn.preload('a b');
    await torchServeModelServer({ baseUrl: standIn.url }).unload(name('a b'), live());
    expect(standIn.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['DELETE /models/a%20b']);
    expect(standIn.registered.size).toBe(0);
  });

  it('counts an unregister answered 404 as done', async () => {
    await expect(
      torchServeModelServer({ baseUrl: standIn.url }).unload(name('ghost'), live()),
    ).resolves.toBeUndefined();
  });

  it('fails retryably when an unregister is already in progress (409)', async () => {
    standIn.failNext('DELETE', 1, 409, 'Unregistration already in progress');
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url }).unload(name('m'), live()),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 409, retryable: true });
  });

  it('lists registered models across pages, following nextPageToken', async () => {
    const names = Array.from({ length: 250 }, (_, i) => `m${String(i).padStart(3, '0')}`);
    standIn.preload(...names);
    const loaded = await torchServeModelServer({ baseUrl: standIn.url }).loadedModels(live());
    expect([...loaded].sort()).toEqual(names);
    expect(standIn.requests.map((r) => r.query.toString())).toEqual([
      'limit=100',
      'limit=100&next_page_token=100',
      'limit=100&next_page_token=200',
    ]);
  });

  it('gives up a listing that keeps handing out pages within the request timeout, not after 1,000 slow pages', async () => {
    // Each page a new token, 20 ms apart: 1,000 of them would hold a start or a resync for 20 s (hours at 30 s each).
    let pages = 0;
    const endless = await startRaw((req, res) => {
      req.resume();
      pages++;
      const body = JSON.stringify({ models: [{ modelName: `m${pages}` }], nextPageToken: String(pages) });
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end(body), 20);
    });
    const error = await effectError(
      torchServeModelServer({ baseUrl: endless.url, timeoutMs: 300 }).loadedModels(live()),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('TorchServe model list');
    expect(pages).toBeLessThan(1000);
  });

  it('lists nothing when nothing is registered', async () => {
    const loaded = await torchServeModelServer({ baseUrl: standIn.url }).loadedModels(live());
    expect(loaded.size).toBe(0);
  });

  it('sends the management key of a TorchServe key file and re-reads it after rotation', async () => {
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, keyFile('key-1'));
    standIn.token = 'key-1';
    const server = torchServeModelServer({ baseUrl: standIn.url, tokenFile });
    await server.load(name('m1'), false, live());

    standIn.token = 'key-2';
    const rejected = await effectError(server.load(name('m2'), false, live()));
    expect(rejected).toMatchObject({ kind: 'http-status', status: 400, retryable: true });
    expect(rejected.message).toContain(tokenFile);
    expect(rejected.message).not.toContain('key-1');

    await writeFile(tokenFile, keyFile('key-2'));
    await server.load(name('m2'), false, live());
    expect(standIn.requests.map((r) => r.authorization)).toEqual([
      'Bearer key-1',
      'Bearer key-1',
      'Bearer key-2',
    ]);
    expect([...standIn.registered].sort()).toEqual(['m1', 'm2']);
  });

  it('tells a token TorchServe asks for when no token file is set apart from a refusal of the model, and asks again', async () => {
    // TorchServe's token authorization on (its default since 0.11), modelsync given no key: nothing of the model's
    // files; a TorchServe restarted with it off, or modelsync given --torchserve-token-file, loads the same files.
    standIn.token = 'key-1';
    const server = torchServeModelServer({ baseUrl: standIn.url });
    const error = await effectError(server.load(name('m'), false, live()));
    expect(error).toMatchObject({ kind: 'http-status', status: 400, retryable: true });
    expect(error.message).toContain('--torchserve-token-file');
    expect(error.message).toContain('Token Authorization failed');
    standIn.token = undefined;
    await server.load(name('m'), false, live());
    expect([...standIn.registered]).toEqual(['m']);
  });

  it("says TorchServe's model API is off when it answers a register or an unregister 405, and asks again", async () => {
    // enable_model_api=false (TorchServe's default): POST and DELETE /models are 405 MethodNotAllowedException, about
    // the server's config, not the model's files; a TorchServe restarted with the API on registers the same files.
    const off = await startRaw((req, res) => {
      req.resume();
      req.on('end', () =>
        res
          .writeHead(405, { 'Content-Type': 'application/json' })
          .end(
            '{"code": 405, "type": "MethodNotAllowedException", "message": "Requested method is not allowed, please refer to API document."}',
          ),
      );
    });
    const server = torchServeModelServer({ baseUrl: off.url });
    for (const failure of [server.load(name('m'), false, live()), server.unload(name('m'), live())]) {
      const error = await effectError(failure);
      expect(error).toMatchObject({ kind: 'http-status', status: 405, retryable: true });
      expect(error.message).toContain('enable_model_api=true');
    }
  });

  it('quotes at most 300 characters of a 405, a token refusal or a 401 body, as every status failure does', async () => {
    // Each message goes into a log line per retry and into the model's /status reason: a server (or a proxy before
    // it) answering 60 KiB of text made each of them 60 KiB.
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, keyFile('key-1'));
    const padding = 'x'.repeat(60 * 1024);
    const status = { now: 405, body: '' };
    const wordy = await startRaw((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(status.now, { 'Content-Type': 'text/plain' }).end(status.body));
    });
    const cases = [
      { now: 405, body: `Requested method is not allowed ${padding}`, tokenFile: undefined },
      { now: 400, body: `Token Authorization failed ${padding}`, tokenFile: undefined },
      { now: 400, body: `Token Authorization failed ${padding}`, tokenFile },
      { now: 401, body: `Unauthorized ${padding}`, tokenFile },
    ];
    for (const { now, body, tokenFile: file } of cases) {
      Object.assign(status, { now, body });
      const server = torchServeModelServer({ baseUrl: wordy.url, tokenFile: file });
      const error = await effectError(server.load(name('m'), false, live()));
      expect(error).toMatchObject({ kind: 'http-status', status: now, retryable: true });
      expect(error.message.length).toBeLessThan(800);
      expect(error.message).toContain(body.slice(0, 20));
    }
  });

  it("takes neither a register answered 200 nor an unregister answered 404 with an HTML page (a proxy's) as done", async () => {
    const proxy = await startRaw((req, res) => {
      req.resume();
      req.on('end', () =>
        res
          .writeHead(req.method === 'DELETE' ? 404 : 200, { 'Content-Type': 'text/html' })
          .end('<html>Sign in</html>'),
      );
    });
    const server = torchServeModelServer({ baseUrl: proxy.url });
    expect(await effectError(server.load(name('m'), false, live()))).toMatchObject({
      kind: 'invalid-response',
      retryable: true,
    });
    expect(await effectError(server.unload(name('m'), live()))).toMatchObject({ status: 404 });
  });

  it.each([404, 400, 409, 413])(
    "retries a register answered %i with an HTML page: a proxy's (an ingress's page), no refusal of the model's files",
    async (status) => {
      // TorchServe answers JSON; a page comes from whatever stands before it (an ingress whose route is not set up
      // yet). Taken for TorchServe's refusal, the model was Failed for good: the resync never retried it.
      const raw = await startRaw((req, res) => {
        req.resume();
        req.on('end', () =>
          res.writeHead(status, { 'Content-Type': 'text/html' }).end('<html>Not here</html>'),
        );
      });
      for (const tokenFile of [undefined, join(tmp.path, 'key')]) {
        if (tokenFile !== undefined) await writeFile(tokenFile, 'key-1');
        const server = torchServeModelServer({ baseUrl: raw.url, tokenFile });
        const error = await effectError(server.load(name('m'), false, live()));
        expect(error).toMatchObject({ kind: 'http-status', status, retryable: true });
        expect(error.message).toContain('HTML page');
      }
    },
  );

  it('retries a replacement whose unregister is answered with a page (a 404 or 400 of a proxy), not refused for good', async () => {
    // The unregister of a replacement runs in the load: a permanent failure there made the model rejected, Failed
    // for good (the resync never retries it), for a page that says nothing of the model's files.
    for (const status of [404, 400]) {
      const raw = await startRaw((req, res) => {
        req.resume();
        req.on('end', () =>
          res.writeHead(status, { 'Content-Type': 'text/html' }).end('<html>Not here</html>'),
        );
      });
      const error = await effectError(
        torchServeModelServer({ baseUrl: raw.url }).load(name('m'), true, live()),
      );
      expect(error).toMatchObject({ kind: 'http-status', status, retryable: true });
      expect(error.message).toContain('HTML page');
    }
  });

  it("bounds the reading of a register's 400 body by the network's rule for error bodies, not by the load timeout", async () => {
    // A proxy before TorchServe trickling a 400's body: each byte well within the timeout between two bytes.
    const trickling = await startRaw((req, res) => {
      res.writeHead(400, { 'content-type': 'text/plain' }).write('Token');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    });
    const server = torchServeModelServer({ baseUrl: trickling.url, timeoutMs: 500, loadTimeoutMs: 300_000 });
    const refused = server.load(name('m'), false, live()).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    const settled = await Promise.race([refused, sleep(60_000, 'still reading after 60 s')]);
    expect(settled).toMatchObject({ kind: 'http-status', status: 400 });
  });

  it('takes a register answered 206 "Workers scaling in progress..." as registered, as TorchServe keeps it', async () => {
    // TorchServe's synchronous register when its worker came up but fewer run than asked: registered (it unregisters
    // only on a 500), its workers restarted by TorchServe. Taken for a refusal, the model was Failed for good, and
    // a new spec's plain register then met 409 and took the old files for the new.
    standIn.failNext('POST', 1, 206, 'Workers scaling in progress...');
    await torchServeModelServer({ baseUrl: standIn.url }).load(name('m'), false, live());
  });

  it('keeps a 400 that is not about the token permanent when no token file is set', async () => {
    standIn.failNext('POST', 1, 400, 'Parameter url is invalid');
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url }).load(name('m'), false, live()),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 400, retryable: false });
    expect(error.message).toContain('HTTP 400: Parameter url is invalid');
  });

  it('keeps a 400 that is not about the token permanent when a token file is set', async () => {
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, keyFile('key-1'));
    standIn.token = 'key-1';
    standIn.failNext('POST', 1, 400, 'Parameter url is invalid');
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url, tokenFile }).load(name('m'), false, live()),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 400, retryable: false });
    expect(error.message).toContain('HTTP 400: Parameter url is invalid');
  });

  it('sends a plain-text token file as it is, trimmed', async () => {
    const tokenFile = join(tmp.path, 'token');
    await writeFile(tokenFile, 'plain-token\n');
    standIn.token = 'plain-token';
    await torchServeModelServer({ baseUrl: standIn.url, tokenFile }).unload(name('m'), live());
    expect(standIn.requests[0]?.authorization).toBe('Bearer plain-token');
  });

  it('sends the management key of a key file whose key and file end in a newline, trimmed', async () => {
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, `${keyFile('key-with-newline\r\n')}\n`);
    standIn.token = 'key-with-newline';
    await torchServeModelServer({ baseUrl: standIn.url, tokenFile }).unload(name('m'), live());
    expect(standIn.requests[0]?.authorization).toBe('Bearer key-with-newline');
  });

  it.each([
    [
      'a plain token with a space inside',
      'token',
      'plain secret-token',
      'whitespace (U+0020) at character 6',
    ],
    [
      'a plain token with a newline inside',
      'token',
      'plain\nsecret-token\n',
      'whitespace (U+000A) at character 6',
    ],
    [
      'a management key with a NUL inside',
      'key_file.json',
      keyFile('secret\u0000token'),
      'a control character (U+0000) at character 7',
    ],
    [
      'a management key with a tab inside',
      'key_file.json',
      keyFile('secret\ttoken'),
      'whitespace (U+0009) at character 7',
    ],
  ])(
    'refuses %s as a bad setting of modelsync, sending nothing and quoting nothing of it',
    async (_what, file, content, reason) => {
      const tokenFile = join(tmp.path, file);
      await writeFile(tokenFile, content);
      standIn.token = 'anything';
      const error = await effectError(
        torchServeModelServer({ baseUrl: standIn.url, tokenFile }).loadedModels(live()),
      );
      // Not `refused`: the loader takes that at a load for the server's verdict on the files, and the model stayed
      // Failed after the file was fixed. A setting of ours is no verdict on the model: the resync retries it.
      expect(error).toMatchObject({ kind: 'invalid-setting', retryable: false });
      expect(error.message).toContain(tokenFile);
      expect(error.message).toContain(`holds ${reason} of the token; it is not sent`);
      expect(error.message).not.toMatch(/secret/);
      expect(standIn.requests).toHaveLength(0);
    },
  );

  it('fails retryably when the token file is missing, and permanently when the key file has no management key', async () => {
    const missing = await effectError(
      torchServeModelServer({ baseUrl: standIn.url, tokenFile: join(tmp.path, 'nope') }).loadedModels(live()),
    );
    expect(missing).toMatchObject({ kind: 'filesystem', retryable: true });
    expect(missing.message).toContain('ENOENT');

    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, JSON.stringify({ inference: { key: 'x' } }));
    const wrong = await effectError(
      torchServeModelServer({ baseUrl: standIn.url, tokenFile }).loadedModels(live()),
    );
    expect(wrong).toMatchObject({ kind: 'not-found', retryable: false });
    expect(wrong.message).toContain('management.key');
    expect(standIn.requests).toHaveLength(0);
  });

  it('fails, rather than hangs, on a FIFO or a huge file where the token file should be, sending nothing', async () => {
    const fifo = join(tmp.path, 'key_file.json');
    execFileSync('mkfifo', [fifo]);
    const call = effectError(
      torchServeModelServer({ baseUrl: standIn.url, tokenFile: fifo }).loadedModels(live()),
    );
    const giveUp = new AbortController();
    const waited = sleep(10_000, 'still reading the FIFO', { signal: giveUp.signal });
    const settled = await Promise.race([call, waited]);
    giveUp.abort(); // the race has settled: its timer goes
    // A reader still blocked on the FIFO (a thread of libuv's pool) gets its end of file.
    await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then(
      (writer) => writer.close(),
      () => undefined,
    );
    expect(settled).toMatchObject({ kind: 'filesystem', retryable: true });
    expect((settled as Error).message).toContain('not a regular file');

    const huge = join(tmp.path, 'huge');
    await writeFile(huge, Buffer.alloc(2 * 1024 * 1024, 'a'));
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url, tokenFile: huge }).loadedModels(live()),
    );
    expect(error).toMatchObject({ kind: 'filesystem', retryable: true });
    expect(error.message).toContain('it is not read');
    expect(standIn.requests).toHaveLength(0);
  });

  it('fails retryably on a key file caught half-written, without quoting it', async () => {
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(tokenFile, '{"management": {"key": "s3cr3t-key"');
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url, tokenFile }).loadedModels(live()),
    );
    expect(error).toMatchObject({ kind: 'filesystem', retryable: true });
    expect(error.message).toBe(`the TorchServe token file ${tokenFile} is not valid JSON (being rewritten?)`);
    expect(standIn.requests).toHaveLength(0);
  });

  it('fails retryably when a register takes longer than the timeout', async () => {
    standIn.registerDelayMs = 2_000;
    const error = await effectError(
      torchServeModelServer({ baseUrl: standIn.url, timeoutMs: 100 }).load(name('m'), false, live()),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('timed out after 100 ms');
  });

  it('fails retryably when the connection is refused', async () => {
    await standIn.close();
    const error = await effectError(torchServeModelServer({ baseUrl: standIn.url }).loadedModels(live()));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toContain('ECONNREFUSED');
    standIn = await startTorchServeStandIn(); // afterEach closes it
  });
});
