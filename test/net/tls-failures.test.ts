/**
 * A TLS handshake that fails before any certificate is checked (a plain-HTTP server on the https:// port, a server
 * of TLS 1.0 only) is said in words with a hint, on one line: not OpenSSL's error string, with its thread id, source
 * file and line, through undici (http(s) storage, GCS, the Hub) and node:https (the SDKs: S3, Azure).
 */
import { get } from 'node:https';
import { createServer as createTlsServer, type Server } from 'node:tls';
import { createNetwork } from '../../src/net';
import { transportError } from '../../src/net/transport-error';
import { useHttpServers } from '../helpers/http-servers';
import { serverTls, tlsFixture } from '../helpers/tls';

const network = createNetwork({ tls: { extraCa: [tlsFixture('ca.pem')] } });
afterAll(() => network.close());

/** How the request to `url` failed, by undici and by node:https, as transportError words it. */
const failures = async (url: string): Promise<ReadonlyArray<string>> => {
  const target = new URL(url);
  const what = `GET ${url}`;
  const byUndici = await network
    .dispatcherFor(target)
    .request({ origin: target.origin, path: target.pathname, method: 'GET' })
    .then(
      () => 'answered',
      (cause: unknown) => transportError(cause, { what, aborted: false }).message,
    );
  const byNode = await new Promise<string>((resolve) =>
    get(target, { agent: network.agentFor(target) }, (res) => {
      res.resume();
      resolve('answered');
    }).on('error', (cause) => resolve(transportError(cause, { what, aborted: false }).message)),
  );
  return [byUndici, byNode];
};

const openSslDump = /:error:[0-9A-F]+:|\.c:\d+|\n/;

describe('transportError: a TLS handshake that fails', () => {
  const serve = useHttpServers();

  it('says a plain-HTTP server answered on the https:// port, in words', async () => {
    const plain = await serve((_req, res) => void res.end('plain'));
    const url = `${plain.url.replace('http:', 'https:')}/m.bin`;
    for (const message of await failures(url)) {
      expect(message).toBe(
        `GET ${url} failed: TLS handshake failed: wrong version number (the server did not answer in TLS: plain HTTP on an https:// port?)`,
      );
      expect(message).not.toMatch(openSslDump);
    }
  });

  it('says a server of TLS 1.0 only shares no TLS version, in words', async () => {
    const old: Server = createTlsServer({
      ...serverTls(),
      minVersion: 'TLSv1',
      maxVersion: 'TLSv1',
      ciphers: 'DEFAULT:@SECLEVEL=0',
    });
    await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = old.address() as { port: number };
      const url = `https://127.0.0.1:${port}/m.bin`;
      for (const message of await failures(url)) {
        expect(message).toMatch(
          new RegExp(
            `^GET ${url.replace(/[.]/g, '\\.')} failed: TLS handshake failed: .*\\(no TLS version both sides accept: modelsync needs TLS 1\\.2 or later\\)$`,
          ),
        );
        expect(message).not.toMatch(openSslDump);
      }
    } finally {
      await new Promise((resolve) => old.close(resolve));
    }
  });

  // Node's advice (`try running Node.js with --use-system-ca`) cannot be followed: NODE_OPTIONS refuses that flag,
  // and the image's entrypoint is node's command line.
  it("points a certificate no trusted CA signed at --ca-bundle, not at Node's --use-system-ca", async () => {
    const server = await serve((_req, res) => void res.end('ok'), { tls: serverTls() });
    const untrusting = createNetwork();
    try {
      const target = new URL(`${server.url}/m.bin`);
      const message = await untrusting
        .dispatcherFor(target)
        .request({ origin: target.origin, path: target.pathname, method: 'GET' })
        .then(
          () => 'answered',
          (cause: unknown) => transportError(cause, { what: `GET ${target.href}`, aborted: false }).message,
        );
      expect(message).toBe(
        `GET ${target.href} failed: unable to verify the first certificate (trust its CA with --ca-bundle)`,
      );
    } finally {
      await untrusting.close();
    }
  });
});
