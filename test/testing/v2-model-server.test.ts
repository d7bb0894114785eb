/** The V2 stand-in's own contract: routes, bodies, statuses and what it records, over real HTTP on 127.0.0.1. */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  startV2ModelServer,
  type V2ModelServerStandIn,
  type V2Request,
} from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { writeFiles } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

interface Answer {
  readonly status: number;
  readonly text: string;
}

const call = async (url: string, method = 'POST', body: string | undefined = '{}'): Promise<Answer> => {
  const response = await fetch(url, {
    method,
    ...(method === 'GET' ? {} : { body, headers: { 'Content-Type': 'application/json' } }),
  });
  return { status: response.status, text: await response.text() };
};

describe('startV2ModelServer', () => {
  const tmp = useTempDir('standin');
  let modelDir: string;
  const servers: V2ModelServerStandIn[] = [];
  const start = async (...args: Parameters<typeof startV2ModelServer>): Promise<V2ModelServerStandIn> => {
    const server = await startV2ModelServer(...args);
    servers.push(server);
    return server;
  };
  const install = (name: string, marker = 'SUCCESS.abc'): Promise<void> =>
    writeFiles(join(modelDir, name), { 'model.bin': 'weights', ...(marker === '' ? {} : { [marker]: '' }) });

  beforeEach(() => {
    modelDir = tmp.path;
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('listens on 127.0.0.1 on a free port by default', async () => {
    const server = await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toMatch(/:0$/);
  });

  it('answers a load 200 with an empty body and marks the model loaded', async () => {
    const server = await start({ modelDir });
    await install('m1');
    expect(await call(`${server.url}/v2/repository/models/m1/load`)).toEqual({ status: 200, text: '' });
    expect(server.loaded.has('m1')).toBe(true);
    expect(server.loads).toEqual([{ name: 'm1', complete: true, status: 200 }]);
  });

  it('refuses a load with 400 and records complete:false when the model dir has no SUCCESS marker', async () => {
    const server = await start({ modelDir });
    await install('partial', '');
    const answer = await call(`${server.url}/v2/repository/models/partial/load`);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toEqual({ error: "failed to load 'partial': no model files" });
    expect(server.loads).toEqual([{ name: 'partial', complete: false, status: 400 }]);
    expect(server.loaded.size).toBe(0);
  });

  it('refuses a load when the model dir does not exist', async () => {
    const server = await start({ modelDir });
    expect((await call(`${server.url}/v2/repository/models/ghost/load`)).status).toBe(400);
    expect(server.loads).toEqual([{ name: 'ghost', complete: false, status: 400 }]);
  });

  it('records complete:false when the files disappear while the load runs', async () => {
    // The files go once the load has begun, with time to spare before it looks again (a busy machine's rm is slow).
    const server = await start({ modelDir, loadDelayMs: 2000 });
    await install('m1');
    const pending = call(`${server.url}/v2/repository/models/m1/load`);
    await waitFor(() => server.maxConcurrentLoads === 1, 10_000, 'the load to begin');
    await rm(join(modelDir, 'm1'), { recursive: true });
    expect((await pending).status).toBe(400);
    expect(server.loads).toEqual([{ name: 'm1', complete: false, status: 400 }]);
  });

  it('loads anything when it has no model dir', async () => {
    const server = await start();
    expect((await call(`${server.url}/v2/repository/models/any/load`, 'POST', undefined)).status).toBe(200);
    expect(server.loads).toEqual([{ name: 'any', complete: true, status: 200 }]);
  });

  it('keeps a loaded model loaded when its reload fails', async () => {
    const server = await start({ modelDir });
    server.preload('m1');
    expect((await call(`${server.url}/v2/repository/models/m1/load`)).status).toBe(400);
    expect(server.loaded.has('m1')).toBe(true);
  });

  it('fails the next n loads with the status given and an {"error"} body', async () => {
    const server = await start();
    server.failNextLoads(2, 503);
    const url = `${server.url}/v2/repository/models/m1/load`;
    const first = await call(url);
    expect(first.status).toBe(503);
    expect(JSON.parse(first.text)).toEqual({ error: "injected failure: load of 'm1' failed" });
    expect((await call(url)).status).toBe(503);
    expect((await call(url)).status).toBe(200);
    expect(server.loads.map((l) => l.status)).toEqual([503, 503, 200]);
  });

  it('answers an unload 200 for a loaded model and 404 {"error"} for an unknown one', async () => {
    const server = await start();
    server.preload('m1');
    expect(await call(`${server.url}/v2/repository/models/m1/unload`)).toEqual({ status: 200, text: '' });
    expect(server.loaded.size).toBe(0);
    const unknown = await call(`${server.url}/v2/repository/models/m1/unload`);
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text)).toEqual({ error: 'Model m1 not found' });
  });

  it('answers an unload of an unknown model 200 when told to, like Triton', async () => {
    const server = await start({ unknownUnloadStatus: 200 });
    expect((await call(`${server.url}/v2/repository/models/ghost/unload`)).status).toBe(200);
  });

  it('lists models in the index with their state, including unloaded ones and model dirs', async () => {
    const server = await start({ modelDir });
    expect(JSON.parse((await call(`${server.url}/v2/repository/index`)).text)).toEqual([]);
    await install('on-disk');
    server.preload('m1', 'm2');
    await call(`${server.url}/v2/repository/models/m2/unload`);
    expect(JSON.parse((await call(`${server.url}/v2/repository/index`)).text)).toEqual([
      { name: 'm1', version: '1', state: 'READY', reason: '' },
      { name: 'm2', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
      { name: 'on-disk', version: '1', state: 'UNAVAILABLE', reason: '' },
    ]);
  });

  it('answers health 200 and model readiness 200 or 400', async () => {
    const server = await start();
    server.preload('m1');
    expect((await call(`${server.url}/v2/health/live`, 'GET')).status).toBe(200);
    expect((await call(`${server.url}/v2/health/ready`, 'GET')).status).toBe(200);
    expect((await call(`${server.url}/v2/models/m1/ready`, 'GET')).status).toBe(200);
    expect((await call(`${server.url}/v2/models/m2/ready`, 'GET')).status).toBe(400);
  });

  it('answers 404 for unknown routes and wrong methods, 400 for bodies that are not JSON', async () => {
    const server = await start();
    expect((await call(`${server.url}/v2/nope`)).status).toBe(404);
    expect((await call(`${server.url}/v2/repository/models/m1/load`, 'GET')).status).toBe(404);
    expect((await call(`${server.url}/v2/repository/index`, 'PUT')).status).toBe(404);
    expect((await call(`${server.url}/v2/repository/models/m1/load`, 'POST', '{oops')).status).toBe(400);
    expect(server.loaded.size).toBe(0);
  });

  it('records every request with its decoded model name and arrival time', async () => {
    const server = await start();
    const before = Date.now();
    await call(`${server.url}/v2/repository/models/a%20b/load`);
    await call(`${server.url}/v2/health/live`, 'GET');
    expect(server.requests).toEqual([
      {
        method: 'POST',
        path: '/v2/repository/models/a%20b/load',
        name: 'a b',
        at: expect.any(Number) as number,
      },
      { method: 'GET', path: '/v2/health/live', at: expect.any(Number) as number },
    ]);
    expect(server.requests[0]!.at).toBeGreaterThanOrEqual(before);
    expect(server.loaded.has('a b')).toBe(true);
  });

  it('tells onRequest of each request as it arrives, before answering it', async () => {
    const seen: V2Request[] = [];
    // The loads the stand-in had answered when the hook saw each request.
    const answeredThen: number[] = [];
    const server = await start({
      loadDelayMs: 300,
      onRequest: (request) => {
        seen.push(request);
        answeredThen.push(server.loads.length);
      },
    });
    const loading = call(`${server.url}/v2/repository/models/m1/load`);
    await waitFor(() => seen.length === 1, 5_000, 'the hook to see the load');
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/v2/repository/models/m1/load', name: 'm1' });
    expect(answeredThen).toEqual([0]); // still loading: the hook came first
    expect((await loading).status).toBe(200);
    await call(`${server.url}/v2/health/live`, 'GET');

    expect(seen).toEqual(server.requests);
    expect(seen[0]).toBe(server.requests[0]);
    expect(seen.map((request) => request.path)).toEqual(['/v2/repository/models/m1/load', '/v2/health/live']);
  });

  it('counts the most loads in flight at once', async () => {
    const server = await start({ loadDelayMs: 100 });
    const load = (name: string): Promise<Answer> => call(`${server.url}/v2/repository/models/${name}/load`);
    await load('s1');
    await load('s2');
    expect(server.maxConcurrentLoads).toBe(1);
    // Loads that last past the test: the three are in flight together however far apart they arrive.
    server.setLoadDelay(600_000);
    const parallel = Promise.all([load('p1'), load('p2'), load('p3')]).catch(() => undefined);
    await waitFor(() => server.maxConcurrentLoads === 3, 10_000, 'three loads counted at once');
    await server.close(); // ends the delays
    await parallel;
  });

  it('applies a new load delay to later loads', async () => {
    const server = await start();
    server.setLoadDelay(200);
    const started = Date.now();
    await call(`${server.url}/v2/repository/models/m1/load`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('closes promptly with a load in flight and a keep-alive connection open', async () => {
    // A load delay past the test's timeout: a close that waited for it would never end.
    const server = await startV2ModelServer({ loadDelayMs: 600_000 });
    await call(`${server.url}/v2/health/live`, 'GET'); // leaves an idle keep-alive connection
    const pending = call(`${server.url}/v2/repository/models/m1/load`).catch((e: unknown) => String(e));
    await sleep(50);
    await server.close();
    expect(await pending).toBe('TypeError: fetch failed');
    expect(server.loaded.size).toBe(0);
  });
});
