/**
 * reverseProxy and the Forwarded header: KServe's agent wraps its proxy in Knative's `ForwardedShimHandler`, which
 * adds `Forwarded` from the client's X-Forwarded-For/-Proto/-Host when it sent none; the model server gets the same.
 */
import { forwardedShim } from '../../src/net/proxy-headers';
import { rawSocket } from '../helpers/raw-socket';
import { startProxy, startUpstream, valuesOf, type ProxyBench, type Upstream } from './reverse-proxy-harness';

let upstream: Upstream | undefined;
let bench: ProxyBench | undefined;
afterEach(async () => {
  await bench?.close();
  await upstream?.close();
  bench = upstream = undefined;
});

/** Sends a GET with `headers` (raw lines) through the proxy; resolves with what the model server received. */
const receivedBehind = async (headers: string): Promise<ReadonlyArray<string>> => {
  upstream = await startUpstream((_req, res) => res.end());
  bench = await startProxy(upstream.port);
  const client = await rawSocket(bench.port);
  client.socket.write(`GET /v2/models/m/infer HTTP/1.1\r\nHost: a\r\n${headers}Connection: close\r\n\r\n`);
  await client.closed;
  expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
  return upstream.seen[0]!.rawHeaders;
};

describe('reverseProxy, the Forwarded header (Knative’s ForwardedShimHandler)', () => {
  it.each([
    [
      'the client, its proxies, the host and the proto',
      'X-Forwarded-For: 203.0.113.7, 10.0.0.1\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: models.example.com\r\n',
      ['for=203.0.113.7;host=models.example.com;proto=https, for=10.0.0.1'],
    ],
    ['an IPv6 client, quoted and bracketed', 'X-Forwarded-For: 2001:db8::1\r\n', ['for="[2001:db8::1]"']],
    ['the proto alone', 'X-Forwarded-Proto: https\r\n', ['proto=https']],
    [
      'the first X-Forwarded-For line only, as Go’s Header.Get reads it',
      'X-Forwarded-For: 192.0.2.1\r\nx-forwarded-for: 192.0.2.2\r\n',
      ['for=192.0.2.1'],
    ],
    ['the shim’s one in place of an empty Forwarded', 'Forwarded:\r\nX-Forwarded-Host: h\r\n', ['host=h']],
    [
      'the client’s own, untouched',
      'Forwarded: for=198.51.100.1\r\nX-Forwarded-For: 192.0.2.1\r\n',
      ['for=198.51.100.1'],
    ],
    ['none without X-Forwarded-* headers', 'X-Forwarded-By: 192.0.2.9\r\n', []],
    [
      'none when the client lists Forwarded in Connection (Go’s proxy drops it after the shim)',
      'Connection: Forwarded\r\nX-Forwarded-Proto: https\r\n',
      [],
    ],
    [
      'one from an X-Forwarded-Proto the client lists in Connection (the shim reads it first)',
      'Connection: X-Forwarded-Proto\r\nX-Forwarded-Proto: https\r\n',
      ['proto=https'],
    ],
  ])('sends the model server %s', async (_case, headers, forwarded) => {
    const received = await receivedBehind(headers);
    expect(valuesOf(received, 'forwarded')).toEqual(forwarded);
  });

  it('leaves X-Forwarded-For as Go’s proxy sends it: the client’s, then the peer’s address', async () => {
    const received = await receivedBehind('X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: http\r\n');
    expect(valuesOf(received, 'x-forwarded-for')).toEqual(['203.0.113.7, 127.0.0.1']);
    expect(valuesOf(received, 'x-forwarded-proto')).toEqual(['http']);
    expect(valuesOf(received, 'forwarded')).toEqual(['for=203.0.113.7;proto=http']);
  });

  it.each([
    [{ xForwardedFor: '1.1.1.1,' }, 'for=1.1.1.1'],
    [{ xForwardedFor: '1.1.1.1,,2.2.2.2' }, 'for=1.1.1.1, for=, for=2.2.2.2'],
    [{ xForwardedFor: ', 2.2.2.2', xForwardedHost: 'h' }, 'for=host=h, for=2.2.2.2'],
    [{ xForwardedFor: ' 1.1.1.1 ,\t::1 ', xForwardedProto: 'http' }, 'for=1.1.1.1;proto=http, for="[::1]"'],
    [{ xForwardedHost: 'h', xForwardedProto: 'https' }, 'host=h;proto=https'],
    [{ forwarded: 'for=x', xForwardedProto: 'https' }, undefined],
    [{ forwarded: '', xForwardedFor: '', xForwardedProto: '' }, undefined],
  ])('writes %j as Knative’s generateForwarded does: %s', (input, expected) => {
    expect(forwardedShim(input)).toBe(expected);
  });
});
