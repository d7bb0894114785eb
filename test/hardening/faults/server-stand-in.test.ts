/** Tests of the V2 stand-in's fault switch (`injectFault`), which the model-server fault suites rely on. */
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { withTimeout } from '../../../src/testing/wait';

let standIn: V2ModelServerStandIn;
beforeEach(async () => {
  standIn = await startV2ModelServer();
});
afterEach(() => standIn.close());

const post = (path: string): Promise<Response> =>
  fetch(`${standIn.url}${path}`, { method: 'POST', body: '{}' });
const load = (name: string): Promise<Response> => post(`/v2/repository/models/${name}/load`);

describe('startV2ModelServer().injectFault', () => {
  it('answers the next requests on the route with the status, headers and body given, then serves again', async () => {
    standIn.injectFault('load', { status: 429, headers: { 'Retry-After': '3' }, body: 'busy' }, 2);
    const answers = [await load('a'), await load('a'), await load('a')];
    expect(answers.map((r) => r.status)).toEqual([429, 429, 200]);
    expect(answers[0]!.headers.get('retry-after')).toBe('3');
    expect(await answers[0]!.text()).toBe('busy');
    expect(standIn.loads).toEqual([{ name: 'a', complete: true, status: 200 }]);
    expect(standIn.requests).toHaveLength(3);
  });

  it('answers a load 200 without loading the model, as a lying server would', async () => {
    standIn.injectFault('load', { status: 200 });
    expect((await load('a')).status).toBe(200);
    expect(standIn.loaded.has('a')).toBe(false);
  });

  it('injects on the index and on unloads too, each route on its own', async () => {
    standIn.injectFault('index', { status: 200, body: 'not json' });
    standIn.injectFault('unload', { status: 502 });
    expect(await (await post('/v2/repository/index')).text()).toBe('not json');
    expect((await post('/v2/repository/models/a/unload')).status).toBe(502);
    expect((await load('a')).status).toBe(200);
  });

  it('resets the connection', async () => {
    standIn.injectFault('load', { reset: true });
    await expect(load('a')).rejects.toThrow('fetch failed');
  });

  it('never answers a hanging request, until the stand-in closes', async () => {
    standIn.injectFault('load', { hang: true });
    const hanging = load('a');
    await expect(withTimeout(hanging, 200, 'the hanging load')).rejects.toThrow('timed out after 200 ms');
    await standIn.close();
    await expect(hanging).rejects.toThrow('fetch failed');
  });

  it('stops injecting once cleared with times 0', async () => {
    standIn.injectFault('load', { status: 500 }, Infinity);
    expect((await load('a')).status).toBe(500);
    standIn.injectFault('load', { status: 500 }, 0);
    expect((await load('a')).status).toBe(200);
  });
});
