/**
 * undici-core: undici's parts loaded without its index are the index's own, and its `request` sends what the index's
 * sends. undici's files are not a published interface: a patch release that moves them fails here, by name.
 */
import * as undici from 'undici';
import { Agent, errors, ProxyAgent, request } from '../../src/net/undici-core';
import { useHttpServers } from '../helpers/http-servers';

const serve = useHttpServers();

/** A server that answers every request with its method, path and body, as JSON. */
const echo = () =>
  serve((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () =>
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(
        JSON.stringify({
          method: incoming.method,
          url: incoming.url,
          body: Buffer.concat(chunks).toString(),
        }),
      ),
    );
  });

describe('undici-core', () => {
  it("is undici's own Agent, ProxyAgent and errors, not copies", () => {
    expect(Agent).toBe(undici.Agent);
    expect(ProxyAgent).toBe(undici.ProxyAgent);
    expect(errors).toBe(undici.errors);
  });

  it.each([
    ['through a given dispatcher', true],
    ["through undici's global dispatcher", false],
  ])('sends a GET with its path and query %s, as the index does', async (_how, ownAgent) => {
    const { url } = await echo();
    const agent = new Agent();
    try {
      const target = new URL(`${url}/models/m.bin?version=2`);
      const answers = await Promise.all(
        [request, undici.request].map(async (send) => {
          const response = await send(target, ownAgent ? { dispatcher: agent } : {});
          return { status: response.statusCode, echoed: await response.body.json() };
        }),
      );
      expect(answers[0]).toEqual({
        status: 200,
        echoed: { method: 'GET', url: '/models/m.bin?version=2', body: '' },
      });
      expect(answers[0]).toEqual(answers[1]);
    } finally {
      await agent.close();
    }
  });

  it('sends the method and body it is given', async () => {
    const { url } = await echo();
    const response = await request(new URL(`${url}/v2/repository/models/m/load`), {
      method: 'POST',
      body: '{}',
    });
    expect(await response.body.json()).toEqual({
      method: 'POST',
      url: '/v2/repository/models/m/load',
      body: '{}',
    });
  });

  it('refuses a URL that is not http(s) as the index does, before any connection', async () => {
    const refusals = await Promise.all(
      [request, undici.request].map((send) =>
        Promise.resolve()
          .then(() => send(new URL('ftp://127.0.0.1/m.bin'), {}))
          .then(
            () => 'sent',
            (error: unknown) => error,
          ),
      ),
    );
    expect(refusals[0]).toBeInstanceOf(errors.InvalidArgumentError);
    expect(refusals[1]).toBeInstanceOf(errors.InvalidArgumentError);
  });
});
