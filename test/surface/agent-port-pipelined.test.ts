/** The agent port with a readiness check pipelined beside a proxied request, on 127.0.0.1 with real sockets. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { boundedServer, defaultServerLimits, reverseProxy, type ReverseProxy } from '../../src/net';
import { agentPortHandler } from '../../src/surface/agent-port-handler';
import { rawSocket, type RawSocket } from '../helpers/raw-socket';
import { startUpstream, type Upstream } from '../net/reverse-proxy-harness';

let upstream: Upstream | undefined;
let server: Server | undefined;
let proxy: ReverseProxy | undefined;
const clients: RawSocket[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  proxy?.close();
  await upstream?.close();
  server = proxy = upstream = undefined;
});

const readiness =
  'GET /ready HTTP/1.1\r\nHost: a\r\nUser-Agent: kube-probe/1.31\r\nK-Network-Probe: queue\r\n\r\n';

describe('agentPortHandler, pipelined', () => {
  it("keeps the server's idle timeout off a proxied request still waiting upstream once a readiness check beside it ends", async () => {
    // The model server answers after 1.5 s; the port's idle timeout is 300 ms, which a waiting exchange must not meet.
    upstream = await startUpstream(
      (_request, response) => void setTimeout(() => response.end('inferred'), 1500),
    );
    proxy = reverseProxy({
      target: { host: '127.0.0.1', port: upstream.port },
      maxSockets: 2,
      timeoutMs: 10_000,
      body: { stallMs: 2000, minRate: 1024 },
      log: pino({ level: 'silent' }),
    });
    const handler = agentPortHandler({
      ready: () => true,
      draining: () => false,
      probe: () => Promise.resolve(true),
      probeWithinMs: 1000,
      proxy: proxy.handle,
    });
    const port = await new Promise<number>((resolve) => {
      server = boundedServer({ ...defaultServerLimits, idleTimeoutMs: 300 }, handler);
      server.listen(0, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port));
    });
    const client = await rawSocket(port);
    clients.push(client);
    client.socket.write(
      'GET /v2/models/m/infer HTTP/1.1\r\nHost: a\r\n\r\n' +
        readiness.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'),
    );
    await client.closed;
    expect(client.received()).toMatch(
      /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\ninferred(HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nqueue)$/,
    );
  });
});
