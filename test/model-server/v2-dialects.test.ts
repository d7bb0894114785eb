/**
 * v2ModelServer as each real server needs it, against the stand-in's profiles of Triton, MLServer and KServe
 * (which the conformance suite holds to the real servers): which server it is, names in URLs, the listing of
 * loaded models, which failed loads are final, and when an unload is done.
 */
import fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelName } from '../../src/core/model-name';
import { v2ModelServer } from '../../src/model-server/v2';
import type { V2ProfileName } from '../../src/testing/v2-profiles';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { effectError } from '../helpers/effect-error';
import { writeFiles } from '../helpers/file-tree';
import { useHttpServers } from '../helpers/http-servers';
import { useTempDir } from '../helpers/temp-dir';
import { sleep } from '../../src/testing/wait';

const name = (s: string): ModelName => s as ModelName;
const live = (): AbortSignal => new AbortController().signal;

const modelDir = useTempDir('v2-dialects');
const serve = useHttpServers();
let standIn: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

const start = async (profile: V2ProfileName): Promise<V2ModelServerStandIn> =>
  (standIn = await startV2ModelServer({ modelDir: modelDir.path, profile }));

/**
 * A fixture model as the profiles read it: `stand-in.json` says what the real server would do with it, and an
 * MLServer settings file names it (MLServer finds a model only by one; the others ignore it).
 */
const model = (
  dir: string,
  standInJson: object = { adds: 1 },
  extra: Record<string, string> = {},
): Promise<void> =>
  writeFiles(join(modelDir.path, dir), {
    'stand-in.json': JSON.stringify(standInJson),
    'model-settings.json': JSON.stringify({ name: dir }),
    ...extra,
  });

const paths = (server: V2ModelServerStandIn): string[] => server.requests.map((r) => `${r.method} ${r.path}`);

describe('v2ModelServer with --server-kind auto', () => {
  it.each<[V2ProfileName, string]>([
    ['triton', 'triton'],
    ['mlserver', 'mlserver'],
    ['kserve', 'kserve'],
  ])('asks the server which it is (GET /v2) once, before its first call: %s', async (profile) => {
    const server = await start(profile);
    await model('m1');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'auto' });
    await client.load(name('m1'), false, live());
    await client.loadedModels(live());
    expect(paths(server).filter((p) => p === 'GET /v2')).toHaveLength(1);
    expect(paths(server)[0]).toBe('GET /v2');
  });

  it('asks again after a metadata answer of 503 (a server starting), rather than speak to it as generic for good', async () => {
    let asks = 0;
    // KServe behind something that answers 503 until the server is up: it has a model list, no repository index.
    const server = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        const json = { 'Content-Type': 'application/json' };
        if (req.method === 'GET' && req.url === '/v2' && ++asks === 1)
          return res.writeHead(503).end('upstream connect error');
        if (req.method === 'GET' && req.url === '/v2')
          return res.writeHead(200, json).end('{"name": "kserve", "version": "0.21"}');
        if (req.method === 'GET' && req.url === '/v2/models')
          return res.writeHead(200, json).end('{"models": ["m1"]}');
        res.writeHead(404, json).end('{"error": "Not Found"}');
      });
    });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'auto' });
    expect(await effectError(client.loadedModels(live()))).toMatchObject({ status: 503, retryable: true });
    expect(await client.loadedModels(live())).toEqual(new Set(['m1']));
  });

  // 200: a login page before the server answers in HTML, no metadata: nothing settles on it.
  it.each([401, 403, 407, 302, 404, 200])(
    'asks again after a metadata answer of %i (a proxy before the server), rather than speak to it as generic for good',
    async (status) => {
      let asks = 0;
      // KServe behind an auth proxy that refuses the first metadata call: the answer is the proxy's, not KServe's.
      const server = await serve((req, res) => {
        req.resume();
        req.on('end', () => {
          const json = { 'Content-Type': 'application/json' };
          // An HTML page, as a proxy's (a 404 page: a route not set up yet), not the JSON or text of a server.
          if (req.method === 'GET' && req.url === '/v2' && ++asks === 1)
            return res
              .writeHead(status, { Location: 'https://login.example/', 'Content-Type': 'text/html' })
              .end('<html>no</html>');
          if (req.method === 'GET' && req.url === '/v2')
            return res.writeHead(200, json).end('{"name": "kserve", "version": "0.21"}');
          if (req.method === 'GET' && req.url === '/v2/models')
            return res.writeHead(200, json).end('{"models": ["m1"]}');
          if (req.method === 'POST' && req.url === '/v2/repository/index')
            return res.writeHead(200, json).end('[]');
          res.writeHead(404, json).end('{"error": "Not Found"}');
        });
      });
      // Asked again at the next call (no wait between the asks here; see below for the schedule).
      const client = v2ModelServer({ baseUrl: server.url, kind: 'auto', kindAskAgainMs: 0 });
      // Meanwhile the protocol alone, as to a server without metadata; then the server's own answer settles it.
      expect(await client.loadedModels(live())).toEqual(new Set());
      expect(await client.loadedModels(live())).toEqual(new Set(['m1']));
      expect(await client.loadedModels(live())).toEqual(new Set(['m1']));
      expect(asks).toBe(2);
    },
  );

  it('asks a server that always refuses the metadata call again on a schedule, not at every call', async () => {
    let asks = 0;
    const server = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method === 'GET' && req.url === '/v2') {
          asks++;
          return res
            .writeHead(403)
            .end('Forbidden (user=system:serviceaccount:ns:sa, verb=get, resource=, subresource=)');
        }
        if (req.method === 'POST' && req.url === '/v2/repository/index') return res.writeHead(200).end('[]');
        res.writeHead(404).end();
      });
    });
    // An hour before the next ask: whatever this machine's pace, the calls below fall within it.
    const client = v2ModelServer({ baseUrl: server.url, kind: 'auto', kindAskAgainMs: 3_600_000 });
    for (let call = 0; call < 5; call++) expect(await client.loadedModels(live())).toEqual(new Set());
    expect(asks).toBe(1);
    // Once the wait is over, it is asked again.
    const soon = v2ModelServer({ baseUrl: server.url, kind: 'auto', kindAskAgainMs: 1 });
    await soon.loadedModels(live());
    await sleep(20);
    await soon.loadedModels(live());
    expect(asks).toBe(3);
  });

  it('says to set --server-kind when a server whose kind is not known yet has no repository index (KServe behind a proxy refusing GET /v2)', async () => {
    const server = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        const json = { 'Content-Type': 'application/json' };
        if (req.method === 'GET' && req.url === '/v2') return res.writeHead(403).end('Forbidden');
        if (req.method === 'GET' && req.url === '/v2/models')
          return res.writeHead(200, json).end('{"models": []}');
        res.writeHead(404, json).end('{"detail": "Not Found"}');
      });
    });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'auto', kindAskAgainMs: 3_600_000 });
    const error = await effectError(client.loadedModels(live()));
    expect(error).toMatchObject({ status: 404 });
    expect(error.message).toContain('--server-kind');
  });

  it('speaks the protocol alone to a server whose metadata answer is junk past 64 KiB, as to one of junk below it', async () => {
    const server = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method === 'GET' && req.url === '/v2')
          return res
            .writeHead(200, { 'Content-Type': 'text/html' })
            .end(`<html>${'x'.repeat(100 * 1024)}</html>`);
        if (req.method === 'POST' && req.url === '/v2/repository/index')
          return res.writeHead(200).end('[{"name": "m1", "state": "READY"}]');
        res.writeHead(404).end();
      });
    });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'auto' });
    expect(await client.loadedModels(live())).toEqual(new Set(['m1']));
  });

  it("asks the server's kind for every call at once, so the abort of the call that asked fails no other", async () => {
    // The ask ran under the signal of the call that made it: a load superseded meanwhile failed every call waiting
    // for the answer, another model's load among them, as "aborted".
    const slow = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url !== '/v2') return void res.writeHead(200).end();
        setTimeout(
          () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"name":"triton"}'),
          300,
        );
      });
    });
    const client = v2ModelServer({ baseUrl: slow.url, kind: 'auto' });
    const superseded = new AbortController();
    const first = effectError(client.load(name('a'), false, superseded.signal));
    const other = client.load(name('b'), false, live());
    setTimeout(() => superseded.abort(), 50);
    expect(await first).toMatchObject({ kind: 'aborted' });
    await other;
    // An ask whose callers all went away fails unheard, not as an unhandled rejection (which ends the process).
    const refusing = await serve((req) => req.socket.destroy());
    const gone = new AbortController();
    gone.abort();
    const unheard = v2ModelServer({ baseUrl: refusing.url, kind: 'auto' });
    expect(await effectError(unheard.load(name('a'), false, gone.signal))).toMatchObject({ kind: 'aborted' });
    await sleep(100);
  });

  it('speaks the protocol alone to a server without metadata', async () => {
    const server = await startV2ModelServer({ modelDir: modelDir.path });
    standIn = server;
    await writeFiles(join(modelDir.path, 'a b'), { 'SUCCESS.x': '' });
    await v2ModelServer({ baseUrl: server.url, kind: 'auto' }).load(name('a b'), false, live());
    expect(paths(server)).toEqual(['GET /v2', 'POST /v2/repository/models/a%20b/load']);
  });
});

describe('v2ModelServer against Triton', () => {
  it('sends the name as it is: Triton looks the path up without decoding it', async () => {
    const server = await start('triton');
    await model('a+b:c');
    await v2ModelServer({ baseUrl: server.url, kind: 'triton' }).load(name('a+b:c'), false, live());
    expect(paths(server)).toEqual(['POST /v2/repository/models/a+b:c/load']);
    expect(server.loaded.has('a+b:c')).toBe(true);
  });

  it.each(['semi;colon', 'my model', "quote'x", 'ü'])(
    'refuses for good, without a request, a name Triton would hang on or misread: %s',
    async (bad) => {
      const server = await start('triton');
      const client = v2ModelServer({ baseUrl: server.url, kind: 'triton' });
      const error = await effectError(client.load(name(bad), false, live()));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toContain('Triton takes only letters, digits');
      await client.unload(name(bad), live()); // never loaded there: nothing to do
      expect(server.requests).toEqual([]);
    },
  );

  it('retries the load of an ensemble whose member models are not in the repository yet; another refusal is final', async () => {
    // Real Triton 2.51: an ensemble listed with its members downloads first (its dir is a config and an empty
    // version dir) and its load is answered 400 while a member is still downloading, and a load of it again 500
    // "failed to poll" (the member's dir is polled and not found). Taken as a refusal of its files, it stayed
    // Failed for good, although Triton itself loads it once the member loads, until its spec changed.
    const ensemble = 'platform: "ensemble"\nensemble_scheduling { step [ { model_name: "stepm" } ] }\n';
    const server = await start('triton');
    await model('ens', { adds: 1 }, { 'config.pbtxt': ensemble });
    await model('plain', { adds: 1 }, { 'config.pbtxt': 'backend: "python"\n' });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton', modelDir: modelDir.path });
    const refuse = (status: number, error: string): void =>
      server.injectFault('load', {
        status,
        body: JSON.stringify({ error }),
        headers: { 'Content-Type': 'application/json' },
      });
    refuse(
      400,
      "load failed for model 'ens': ensemble ens contains models that are not available or ambiguous: stepm, pre\n",
    );
    const waiting = await effectError(client.load(name('ens'), false, live()));
    expect(waiting).toMatchObject({ status: 400, retryable: true });
    expect(waiting.message).toContain('contains models that are not available or ambiguous: stepm, pre');
    refuse(500, "failed to load 'ens', failed to poll from model repository");
    expect(await effectError(client.load(name('ens'), false, live()))).toMatchObject({
      status: 500,
      retryable: true,
    });
    refuse(
      400,
      "load failed for model 'ens': version 1 is at UNAVAILABLE state: Internal: SyntaxError: invalid",
    );
    expect(await effectError(client.load(name('ens'), false, live()))).toMatchObject({
      status: 400,
      retryable: false,
    });
    // A model that is no ensemble: its own dir or config.pbtxt is what Triton could not read.
    refuse(500, "failed to load 'plain', failed to poll from model repository");
    expect(await effectError(client.load(name('plain'), false, live()))).toMatchObject({
      status: 500,
      retryable: false,
    });
    await client.load(name('ens'), false, live()); // the members are there now
    expect(server.loaded.has('ens')).toBe(true);
  });

  it('lists no name Triton cannot take, so no resync "unloads" it with no call and says it removed it', async () => {
    // Triton can hold such a model (an ONNX model named "modèle", loaded by someone else). Its unload is a no-op
    // here (no URL can name it to Triton), so a resync that took it for an unlisted model logged "model removed"
    // with no call sent, and did it again at every resync while Triton kept serving it.
    const index = [
      { name: 'modèle', version: '1', state: 'READY' },
      { name: 'my model', version: '1', state: 'READY' },
      { name: 'ok', version: '1', state: 'READY' },
    ];
    const triton = await serve((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(index)),
      );
    });
    expect([...(await v2ModelServer({ baseUrl: triton.url, kind: 'triton' }).loadedModels(live()))]).toEqual([
      'ok',
    ]);
    // Another server takes them: they are listed, and unloaded as any other.
    expect([
      ...(await v2ModelServer({ baseUrl: triton.url, kind: 'mlserver' }).loadedModels(live())),
    ]).toEqual(['modèle', 'my model', 'ok']);
  });

  it('counts entries without a state (dirs Triton never loaded, ours included) as not loaded', async () => {
    const server = await start('triton');
    await model('m1');
    await model('.tmp-m2-0a1b2c');
    await model('never');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton' });
    await client.load(name('m1'), false, live());
    expect([...(await client.loadedModels(live()))]).toEqual(['m1']);
  });

  it('fails a load for good when Triton cannot poll the model (no dir, a bad config), with its reason', async () => {
    const server = await start('triton');
    await model('broken', { fails: 'config' });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton' });
    for (const missing of ['broken', 'absent']) {
      const error = await effectError(client.load(name(missing), false, live()));
      expect(error).toMatchObject({ kind: 'http-status', status: 500, retryable: false });
      expect(error.message).toContain('failed to poll from model repository');
    }
  });

  it('fails a load for good when the model raises while loading (400), with the server reason', async () => {
    const server = await start('triton');
    await model('raises', { fails: 'raised' });
    const error = await effectError(
      v2ModelServer({ baseUrl: server.url, kind: 'triton' }).load(name('raises'), false, live()),
    );
    expect(error).toMatchObject({ status: 400, retryable: false });
    expect(error.message).toContain('RuntimeError: raise-on-load: boom');
  });

  it('returns from an unload only once the index says the model is unloaded, not at its early 200', async () => {
    const server = await start('triton');
    await model('m1');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton', unloadPollMs: 20 });
    await client.load(name('m1'), false, live());
    const started = Date.now();
    await client.unload(name('m1'), live());
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000); // the profile's UNLOADING lasts 1.1 s
    expect(paths(server).filter((p) => p === 'POST /v2/repository/index').length).toBeGreaterThan(1);
  });

  it('looks at the index again when it failed on an entry that vanished while Triton read the dir', async () => {
    // Real Triton 2.51, 100 models removed at once: each unload waits on the index while the others' dirs are
    // moved aside and deleted, and Triton's index fails whole (500 "failed to stat file <repo>/.old-…") when an
    // entry goes between its readdir and its stat. That failed the unload (Retrying, the unload sent again, a
    // backoff), one more for each removal racing it, up to Failed; it is a look to take again.
    const server = await start('triton');
    await model('m1');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton', unloadPollMs: 20 });
    await client.load(name('m1'), false, live());
    server.injectFault(
      'index',
      {
        status: 500,
        body: JSON.stringify({ error: `failed to stat file ${modelDir.path}/.old-m2-dda1aedd961d` }),
        headers: { 'Content-Type': 'application/json' },
      },
      3,
    );
    await client.unload(name('m1'), live());
    expect(paths(server).filter((p) => p === 'POST /v2/repository/models/m1/unload')).toHaveLength(1);
    expect(server.loaded.has('m1')).toBe(false);
  });

  it('lists the loaded models although the index failed on an entry that vanished while Triton read the dir', async () => {
    // The resync's look: failed, its drift repair waited a whole interval, with a warn line that the server did
    // not list its models, while modelsync's own downloads and removals moved dirs in the repository.
    const server = await start('triton');
    await model('m1');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton' });
    await client.load(name('m1'), false, live());
    server.injectFault(
      'index',
      {
        status: 500,
        body: JSON.stringify({ error: `failed to stat file ${modelDir.path}/.tmp-m2-4f1c2a` }),
        headers: { 'Content-Type': 'application/json' },
      },
      2,
    );
    expect([...(await client.loadedModels(live()))]).toEqual(['m1']);
  });

  it('gives up waiting for an unload after the request timeout, retryably', async () => {
    const server = await start('triton');
    await model('m1');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton', timeoutMs: 300, unloadPollMs: 20 });
    await client.load(name('m1'), false, live());
    const error = await effectError(client.unload(name('m1'), live()));
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('still unloading');
  });

  it('gives the whole unload wait one deadline, however long each look at the index takes', async () => {
    // Triton whose index answers each look just within the timeout, always still UNLOADING: with a timeout of its
    // own, the second look began before the deadline and ran its whole time past it (about twice the timeout).
    const server = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/v2/repository/models/m1/unload') return res.writeHead(200).end();
        if (req.url !== '/v2/repository/index') return res.writeHead(404).end();
        setTimeout(
          () =>
            res
              .writeHead(200, { 'Content-Type': 'application/json' })
              .end('[{"name": "m1", "state": "UNLOADING"}]'),
          3900,
        );
      });
    });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'triton', timeoutMs: 4000, unloadPollMs: 20 });
    const started = performance.now();
    const error = await effectError(client.unload(name('m1'), live()));
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    // One deadline: 4 s and the timers' lateness (2.5 s allowed for a busy machine); before, 7.9 s at the least.
    expect(performance.now() - started).toBeLessThan(6500);
  }, 20_000);
});

describe('v2ModelServer against MLServer', () => {
  it("vets a model's files before the server sees them: one nesting another model's settings is refused, on MLServer alone", async () => {
    const files = {
      sizes: new Map([
        ['model-settings.json', 2],
        ['extra/model-settings.json', 17],
      ]),
      read: (path: string): Promise<Buffer> =>
        Promise.resolve(Buffer.from(path === 'model-settings.json' ? '{}' : '{"name":"victim"}')),
    };
    const server = await start('mlserver');
    const asked = v2ModelServer({ baseUrl: server.url, kind: 'auto' });
    const refusal = await effectError(asked.vetFiles!(name('intruder'), files, live()));
    expect(refusal).toMatchObject({ kind: 'refused', retryable: false });
    expect(refusal.message).toContain(
      'extra/model-settings.json, which MLServer would take for the model "victim"',
    );
    expect(paths(server)).toEqual(['GET /v2']);
    for (const kind of ['triton', 'kserve', 'generic'] as const)
      await expect(
        v2ModelServer({ baseUrl: server.url, kind }).vetFiles!(name('intruder'), files, live()),
      ).resolves.toBeUndefined();
  });

  it('fails a load for good when the model raises (500 builtins.…), and retries a worker that died', async () => {
    const server = await start('mlserver');
    await model('raises', { fails: 'raised' });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'mlserver' });
    const final = await effectError(client.load(name('raises'), false, live()));
    expect(final).toMatchObject({ status: 500, retryable: false });
    expect(final.message).toContain('builtins.RuntimeError: raise-on-load: boom');
    server.injectFault('load', {
      status: 500,
      body: '{"error":"Worker process stopped unexpectedly with exit code 256."}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(await effectError(client.load(name('raises'), false, live()))).toMatchObject({ retryable: true });
  });

  it('fails a load answered with a Python traceback for good, its reason the exception, not the frames', async () => {
    // MLServer's 500 for an exception outside a worker (a settings file naming a module that is not installed), and
    // for every model that raises with MLSERVER_PARALLEL_WORKERS=0: Starlette's debug page, the frames first and
    // the exception last, after 5 KiB; the reason kept the first 300 characters, frames that say nothing of why.
    const frame = (file: string, line: number, code: string): string =>
      `  File "/venv/lib/python3.11/site-packages/${file}", line ${line}, in call\n    ${code}\n`;
    const traceback = (inner: string): string =>
      'Traceback (most recent call last):\n' +
      frame('starlette/middleware/errors.py', 165, 'await self.app(scope, receive, _send)') +
      frame('mlserver/handlers/model_repository.py', 55, 'await self._model_registry.load(model_settings)') +
      frame('mlserver/utils.py', 41, 'return importlib.import_module(module_path)') +
      '  File "<frozen importlib._bootstrap>", line 1204, in _gcd_import\n' +
      inner;
    const server = await start('mlserver');
    await model('nomodule');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'mlserver' });
    server.injectFault('load', {
      status: 500,
      body: traceback("ModuleNotFoundError: No module named 'mlserver_nope'\n"),
      headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    });
    const final = await effectError(client.load(name('nomodule'), false, live()));
    expect(final).toMatchObject({ status: 500, retryable: false });
    expect(final.message).toContain("ModuleNotFoundError: No module named 'mlserver_nope'");
    // A chained one: the exception that ended it is the last traceback's, with every line of its message.
    server.injectFault('load', {
      status: 500,
      body:
        traceback('KeyError: 184\n') +
        '\nDuring handling of the above exception, another exception occurred:\n\n' +
        traceback('RuntimeError: model.joblib is no joblib file:\n  it was cut at byte 100\n'),
      headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    });
    const chained = await effectError(client.load(name('nomodule'), false, live()));
    expect(chained).toMatchObject({ status: 500, retryable: false });
    expect(chained.message).toContain('RuntimeError: model.joblib is no joblib file: it was cut at byte 100');
  });

  it('lists the models of its index (which needs a body), by their settings name', async () => {
    const server = await start('mlserver');
    await model(
      'iris',
      { adds: 1 },
      { 'model-settings.json': '{"name":"iris","parameters":{"version":"v1"}}' },
    );
    const client = v2ModelServer({ baseUrl: server.url, kind: 'mlserver' });
    await client.load(name('iris'), false, live());
    expect([...(await client.loadedModels(live()))]).toEqual(['iris']);
  });
});

describe('v2ModelServer against the KServe model server', () => {
  it('lists the models it holds with GET /v2/models (it has no repository index)', async () => {
    const server = await start('kserve');
    await model('m1');
    const client = v2ModelServer({ baseUrl: server.url, kind: 'kserve' });
    await client.load(name('m1'), false, live());
    expect([...(await client.loadedModels(live()))]).toEqual(['m1']);
    expect(paths(server)).toContain('GET /v2/models');
    expect(paths(server)).not.toContain('POST /v2/repository/index');
  });

  it('fails a load for good on the 503 that names the exception, and retries another 503', async () => {
    const server = await start('kserve');
    await model('raises', { fails: 'raised' });
    const client = v2ModelServer({ baseUrl: server.url, kind: 'kserve' });
    const final = await effectError(client.load(name('raises'), false, live()));
    expect(final).toMatchObject({ status: 503, retryable: false });
    expect(final.message).toContain("Error type: <class 'RuntimeError'>");
    server.injectFault('load', { status: 503, body: 'upstream connect error' });
    expect(await effectError(client.load(name('raises'), false, live()))).toMatchObject({ retryable: true });
  });
});

describe('v2ModelServer with the model dir, before a load', () => {
  it.each<[V2ProfileName, string, string]>([
    ['triton', 'config.pbtxt', 'backend: "python"\nname: "iris-v1"\n'],
    ['mlserver', 'model-settings.json', JSON.stringify({ name: 'iris-v1' })],
  ])(
    'refuses for good, without a request, a model its files name otherwise, naming both names: %s',
    async (profile, file, text) => {
      const server = await start(profile);
      await model('mm', { adds: 1 }, { [file]: text });
      const client = v2ModelServer({ baseUrl: server.url, kind: profile, modelDir: modelDir.path });
      const error = await effectError(client.load(name('mm'), false, live()));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toMatch(/the config names the model "mm" but its .* names it "iris-v1"/);
      expect(paths(server)).toEqual([]);
    },
  );

  it('lets the load go ahead, within the request timeout, when the read of its name file hangs (a hung mount)', async () => {
    const server = await start('triton');
    await model('mm', { adds: 1 }, { 'config.pbtxt': 'name: "mm"\n' });
    const lstat = fsPromises.lstat as (...args: unknown[]) => Promise<unknown>;
    let release = (): void => undefined;
    const hung = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    // Our read of config.pbtxt hangs, as on a hung NFS mount; the stand-in's own reads of it after do not.
    const spy = jest.spyOn(fsPromises, 'lstat').mockImplementation((async (
      path: string,
      ...rest: unknown[]
    ) => {
      if (String(path).endsWith('/config.pbtxt') && first) {
        first = false;
        await hung;
      }
      return lstat(path, ...rest);
    }) as never);
    try {
      const client = v2ModelServer({
        baseUrl: server.url,
        kind: 'triton',
        modelDir: modelDir.path,
        timeoutMs: 200, // the check's bound; the load itself has its own, long one
        loadTimeoutMs: 60_000,
      });
      // Held, it would hold the load slot for good; the server is asked and answers for the files.
      await client.load(name('mm'), false, live());
      expect(paths(server)).toEqual(['POST /v2/repository/models/mm/load']);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  it.each<[string, Record<string, string>, RegExp]>([
    ['bare', { 'model.joblib': 'x' }, /there is no model-settings\.json at the top of its dir/],
    [
      'badjson',
      { 'model-settings.json': '{"implementation": ' },
      /its model-settings\.json is no JSON object \(.+\): MLServer skips such a file/,
    ],
    [
      'skipped',
      { 'model-settings.json': '{"name": "skipped", "implmentation": "x"}' },
      /MLServer did not take its model-settings\.json \(its log says why/,
    ],
  ])(
    "says why MLServer answered a load 404 'Model … not found' for a model whose files are there: %s",
    async (dir, files, why) => {
      // Real MLServer 1.7.1: a dir without model-settings.json, or one it cannot parse or validate, is skipped when
      // it lists its repository, and the load answers only that the model is not found.
      const server = await start('mlserver');
      await writeFiles(join(modelDir.path, dir), { 'stand-in.json': '{"adds":1}', ...files });
      server.injectFault('load', {
        status: 404,
        body: JSON.stringify({ error: `Model ${dir} not found` }),
        headers: { 'Content-Type': 'application/json' },
      });
      const client = v2ModelServer({ baseUrl: server.url, kind: 'mlserver', modelDir: modelDir.path });
      const error = await effectError(client.load(name(dir), false, live()));
      expect(error).toMatchObject({ status: 404, retryable: false });
      expect(error.message).toContain(`Model ${dir} not found`);
      expect(error.message).toMatch(why);
    },
  );

  it.each<V2ProfileName>(['kserve', 'generic'])(
    'reads no name from the files of a server that takes none from them: %s',
    async (profile) => {
      const server = await start(profile);
      // The generic stand-in loads a dir with a marker; the KServe one goes by stand-in.json.
      await model('mm', { adds: 1 }, { 'config.pbtxt': 'name: "iris-v1"', 'SUCCESS.x': '' });
      const client = v2ModelServer({ baseUrl: server.url, kind: profile, modelDir: modelDir.path });
      await client.load(name('mm'), false, live());
      expect(paths(server)).toEqual([`POST /v2/repository/models/mm/load`]);
    },
  );
});
