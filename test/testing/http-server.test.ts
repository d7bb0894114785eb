/** startHttpServer's contract: where it listens, failing handlers, a close that drops open connections. */
import { request } from 'node:http';
import { startHttpServer, writeRepeated, type RunningHttpServer } from '../../src/testing/http-server';
import { sleep } from '../../src/testing/wait';

describe('startHttpServer', () => {
  const servers: RunningHttpServer[] = [];
  const start = async (...args: Parameters<typeof startHttpServer>): Promise<RunningHttpServer> => {
    const server = await startHttpServer(...args);
    servers.push(server);
    return server;
  };
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  it('listens on 127.0.0.1 on a free port by default and answers with the handler', async () => {
    const server = await start((req, res) => res.writeHead(200).end(`you asked for ${req.url ?? ''}`));
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(server.port).toBeGreaterThan(0);
    const response = await fetch(`${server.url}/x`);
    expect([response.status, await response.text()]).toEqual([200, 'you asked for /x']);
  });

  it('gives a loopback URL when it listens on every interface', async () => {
    const server = await start((_req, res) => res.end('hi'), { host: '0.0.0.0' });
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(await (await fetch(server.url)).text()).toBe('hi');
  });

  it('rejects when the port is taken', async () => {
    const first = await start((_req, res) => res.end());
    await expect(startHttpServer((_req, res) => res.end(), { port: first.port })).rejects.toThrow(
      /EADDRINUSE/,
    );
  });

  it.each([
    [
      'throws',
      (): never => {
        throw new Error('boom');
      },
    ],
    ['returns a promise that rejects', (): Promise<never> => Promise.reject(new Error('boom'))],
  ])('answers 500 with the error when the handler %s', async (_label, handler) => {
    const server = await start(handler);
    const response = await fetch(server.url);
    expect([response.status, await response.text()]).toEqual([500, 'Error: boom']);
  });

  it('drops the connection when the handler fails after sending the headers', async () => {
    const server = await start(async (_req, res) => {
      res.writeHead(200, { 'Content-Length': 10 });
      res.write('half');
      await sleep(10);
      throw new Error('late');
    });
    const response = await fetch(server.url);
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('closes at once with a keep-alive connection and a request in progress', async () => {
    const server = await start((req, res) => {
      if (req.url === '/hang')
        res.writeHead(200).write('x'); // never ends
      else res.end('ok');
    });
    await fetch(server.url).then((response) => response.text()); // leaves an idle keep-alive connection
    const hanging = new Promise<string>((resolve) => {
      request(`${server.url}/hang`, (response) => {
        response.resume();
        response.on('close', () => resolve('closed'));
      }).end();
    });
    await sleep(50);
    // The answer never ends: a close that waited for it would never end either.
    await server.close();
    expect(await hanging).toBe('closed');
    await expect(fetch(server.url)).rejects.toThrow('fetch failed');
  });
});

describe('writeRepeated', () => {
  it('writes the block until the body has its length, then ends it', async () => {
    const block = Buffer.from('0123456789abcdef');
    const server = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'Content-Length': 16 * 4096 });
      writeRepeated(res, block, 16 * 4096);
    });
    try {
      const body = Buffer.from(await (await fetch(server.url)).arrayBuffer());
      expect(body.length).toBe(16 * 4096);
      expect(body.equals(Buffer.concat(Array.from({ length: 4096 }, () => block)))).toBe(true);
    } finally {
      await server.close();
    }
  });
});
