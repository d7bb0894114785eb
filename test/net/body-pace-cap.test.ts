/** paceBody with the connection cap, on 127.0.0.1 with real sockets: a stalled body gives its place up. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { paceBody } from '../../src/net/body-pace';
import { boundedServer, defaultServerLimits } from '../../src/net/bounded-server';
import { stalledBodyGivesWayMs } from '../../src/net/connection-cap';
import { sleep } from '../../src/testing/wait';
import { getHead, rawSocket, type RawSocket } from '../helpers/raw-socket';

let server: Server | undefined;
const clients: RawSocket[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** One place, no reserve, every timeout a minute away: a body is read, paced, and answered once it has all come. */
const serve = (): Promise<number> =>
  new Promise((resolve) => {
    const limits = { ...defaultServerLimits, maxConnections: 1, reservedConnections: 0 };
    server = boundedServer(
      { ...limits, idleTimeoutMs: 60_000, requestTimeoutMs: 60_000 },
      (request, response) => {
        const stop = paceBody(request, { stallMs: 60_000, minRate: 0 }, () => response.destroy());
        request.resume();
        request.on('end', () => response.end('ok'));
        response.once('close', stop);
      },
    );
    server.listen(0, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port));
  });

const connect = async (port: number): Promise<RawSocket> => {
  const client = await rawSocket(port);
  clients.push(client);
  return client;
};

describe('paceBody under the connection cap', () => {
  it('lets the stalled body of the second of two pipelined requests give its connection up', async () => {
    const port = await serve();
    const stalled = await connect(port);
    // The first request whole, the second's body begun and never finished: the first's end must not clear the
    // cap's watch of the second's body.
    stalled.socket.write(
      'POST /a HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\nab' +
        'POST /b HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\nab',
    );
    await sleep(stalledBodyGivesWayMs + 500);
    const next = await connect(port);
    next.socket.write(getHead('/', 'Connection: close\r\n'));
    await Promise.all([next.closed, stalled.closed]);
    expect(next.received()).toMatch(/^HTTP\/1\.1 200 OK[^]*ok$/);
    expect(stalled.received()).toMatch(/^HTTP\/1\.1 200 OK[^]*ok(HTTP\/1\.1 408 |$)/);
  });
});
