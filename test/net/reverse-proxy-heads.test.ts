/** reverseProxy and the model server's answer heads: as large as a client's may be, passed on whole. */
import { rawSocket } from '../helpers/raw-socket';
import { send, startProxy, startUpstream, type ProxyBench, type Upstream } from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  bench = upstream = undefined;
});

describe('reverseProxy, answer heads', () => {
  it('passes on an answer whose head is past node:http’s 16 KiB, up to the 64 KiB a request head may have', async () => {
    const big = 'a'.repeat(40 * 1024);
    upstream = await startUpstream((_req, res) => res.setHeader('X-Big', big).end('ok'));
    bench = await startProxy(upstream.port);
    // A raw client: node:http's own would refuse the head past 16 KiB.
    const client = await rawSocket(bench.port);
    client.socket.write('GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(client.received()).toContain(`\r\nX-Big: ${big}\r\n`);
    expect(client.received().endsWith('\r\n\r\nok')).toBe(true);
  });

  it('answers 502 to an answer head past 64 KiB', async () => {
    upstream = await startUpstream((_req, res) => res.setHeader('X-Big', 'a'.repeat(80 * 1024)).end('ok'));
    bench = await startProxy(upstream.port);
    const answer = await send(bench.port);
    expect([answer.status, answer.body.toString()]).toEqual([502, 'the model server did not answer\n']);
  });
});
