/** reverseProxy and transfer codings other than chunked: refused both ways, never passed on as the body itself. */
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { rawSocket } from '../helpers/raw-socket';
import { send, startProxy, startUpstream, type ProxyBench, type Upstream } from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let raw: Server | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  await new Promise((resolve) => (raw ? raw.close(resolve) : resolve(undefined)));
  bench = upstream = raw = undefined;
});

describe('reverseProxy, transfer codings', () => {
  // Each body is the gzip coding of nothing: taking the chunks off (or reading it as the body) would hand its bytes on.
  it.each([
    ['gzip, chunked', '3\r\n\x1f\x8b\x08\r\n0\r\n\r\n'],
    // A coding alone leaves no chunks to end the body: Node's parser fails on it in the turn the 501 is written.
    ['gzip', '\x1f\x8b\x08'],
    ['xchunked', '\x1f\x8b\x08'],
  ])(
    'answers 501 to a request body coded %j, as Go does, and sends nothing upstream',
    async (coding, body) => {
      upstream = await startUpstream((req, res) => {
        req.resume();
        req.on('end', () => res.end('proxied'));
      });
      bench = await startProxy(upstream.port);
      const client = await rawSocket(bench.port);
      client.socket.write(
        `POST /v2/models/m/infer HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ${coding}\r\n\r\n${body}`,
        'latin1',
      );
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 501 /);
      expect(client.received()).toContain('transfer codings other than chunked are not proxied\n');
      expect(upstream.seen).toEqual([]);
    },
  );

  it('still proxies a chunked request body', async () => {
    upstream = await startUpstream((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => res.end(Buffer.concat(chunks)));
    });
    bench = await startProxy(upstream.port);
    const answer = await send(bench.port, {
      method: 'POST',
      body: [Buffer.from('one '), Buffer.from('two')],
    });
    expect([answer.status, answer.body.toString()]).toEqual([200, 'one two']);
  });

  it.each([
    ['gzip, chunked', '3\r\n\x1f\x8b\x08\r\n0\r\n\r\n'],
    ['gzip', '\x1f\x8b\x08'],
  ])('answers 502 to an answer coded %j, never its coded bytes as the body', async (coding, body) => {
    raw = createTcpServer((socket: Socket) =>
      socket
        .once('data', () =>
          socket.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${coding}\r\n\r\n${body}`, 'latin1'),
        )
        .on('error', () => undefined),
    );
    await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
    bench = await startProxy((raw.address() as AddressInfo).port);
    const answer = await send(bench.port);
    expect([answer.status, answer.body.toString()]).toEqual([502, 'the model server did not answer\n']);
  });
});
