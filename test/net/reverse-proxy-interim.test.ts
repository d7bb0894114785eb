/** reverseProxy and what Go's server and ReverseProxy (KServe's agent) do around the answer: interim answers, `OPTIONS *`. */
import type { Socket } from 'node:net';
import { rawSocket } from '../helpers/raw-socket';
import { waitFor } from '../../src/testing/wait';
import { startProxy, startUpstream, type ProxyBench, type Upstream } from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  bench = upstream = undefined;
});

/** What a raw client got for `head` once the proxy closed the connection (the head asks it to). */
const exchange = async (head: string): Promise<string> => {
  const client = await rawSocket(bench!.port);
  client.socket.write(head);
  await client.closed;
  return client.received();
};

const countOf = (text: string, part: string): number => text.split(part).length - 1;

describe('reverseProxy, interim answers and OPTIONS *', () => {
  it('passes 103 Early Hints on with their headers, then the final answer, as Go does', async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeEarlyHints({ link: '</a.css>; rel=preload', 'x-hint': '1' });
      res.writeEarlyHints({ link: ['</b.js>; rel=preload', '</c.js>; rel=preload'] });
      res.end('final');
    });
    bench = await startProxy(upstream.port);
    const received = await exchange('GET /hints HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    expect(received).toMatch(
      /^HTTP\/1\.1 103 Early Hints\r\nLink: <\/a\.css>; rel=preload\r\nx-hint: 1\r\n\r\nHTTP\/1\.1 103 Early Hints\r\nLink: <\/b\.js>; rel=preload, <\/c\.js>; rel=preload\r\n\r\nHTTP\/1\.1 200 OK\r\n/,
    );
    expect(received.endsWith('\r\n\r\nfinal')).toBe(true);
  });

  it('passes 102 Processing on, and sends no interim answer to an HTTP/1.0 client (RFC 9110 §15.2)', async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeProcessing();
      res.end('done');
    });
    bench = await startProxy(upstream.port);
    const received = await exchange('GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    expect(received).toMatch(/^HTTP\/1\.1 102 Processing\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    const old = await exchange('GET / HTTP/1.0\r\n\r\n');
    expect(old).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('drops interim answers a client is not reading rather than queue them: a flood grows no buffer', async () => {
    const hint = `</${'h'.repeat(1000)}.css>; rel=preload`;
    const flood = 40_000; // ~40 MB of 103s: far past what the kernel buffers for a client not reading
    upstream = await startUpstream((_req, res) => {
      for (let i = 0; i < flood; i++) res.writeEarlyHints({ link: hint });
      res.end('final');
    });
    bench = await startProxy(upstream.port);
    // What the proxy holds for the client, after each write to its socket, and when it wrote the final answer:
    // the client reads only once the proxy went through the whole flood, however slow this machine is.
    let mostQueued = 0;
    let finalWritten = false;
    bench.server.on('connection', (socket: Socket) => {
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = (...args: unknown[]) => {
        const written = write(...args);
        mostQueued = Math.max(mostQueued, socket.writableLength);
        if (String(args[0]).includes('HTTP/1.1 200 OK')) finalWritten = true;
        return written;
      };
    });
    const client = await rawSocket(bench.port);
    client.socket.pause();
    client.socket.write('GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    await waitFor(() => finalWritten, 30_000, 'the proxy wrote the final answer');
    client.socket.resume();
    await client.closed;
    const received = client.received();
    expect(mostQueued).toBeLessThan(128 * 1024); // 64 KiB, a hint past it, the final answer
    expect(countOf(received, 'HTTP/1.1 103 Early Hints\r\n')).toBeLessThan(flood);
    expect(received).toContain('HTTP/1.1 200 OK\r\n');
    expect(received.endsWith('\r\n\r\nfinal')).toBe(true);
  });

  it('answers OPTIONS * itself, 200 with no body, and sends nothing upstream, as Go’s server does', async () => {
    upstream = await startUpstream((_req, res) => res.end('upstream'));
    bench = await startProxy(upstream.port);
    const client = await rawSocket(bench.port);
    client.socket.write(
      'OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
    );
    await client.closed;
    const received = client.received();
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(received.split('\r\n\r\n')[0]).toMatch(/\r\nContent-Length: 0(\r\n|$)/i);
    expect(received.endsWith('\r\n\r\nupstream')).toBe(true); // the connection kept for the next request
    expect(upstream.seen.map(({ method, url }) => `${method} ${url}`)).toEqual(['GET /']);
  });
});
