/**
 * A Network given CAs of its own (`--ca-bundle`, S3's AWS_CA_BUNDLE, KServe's cabundle.crt) trusts them on top of
 * the process's default CAs, not of Node's bundled roots alone: NODE_EXTRA_CA_CERTS and `--use-system-ca` (which
 * Node's own error message suggests) make the defaults, here set as they would (`tls.setDefaultCACertificates`).
 */
import { get } from 'node:https';
import { getCACertificates, rootCertificates, setDefaultCACertificates } from 'node:tls';
import { createNetwork } from '../../src/net';
import { useHttpServers } from '../helpers/http-servers';
import { serverTls, tlsFixture } from '../helpers/tls';

describe('Network: CAs of its own on top of the default ones', () => {
  const serve = useHttpServers();
  const defaults = getCACertificates('default');
  afterEach(() => setDefaultCACertificates(defaults));

  it('still trusts a CA of NODE_EXTRA_CA_CERTS or the system store when given a bundle, by undici and node:https', async () => {
    const server = await serve((_req, res) => void res.end('ok'), { tls: serverTls() });
    // As NODE_EXTRA_CA_CERTS=<the test CA> sets the defaults at start.
    setDefaultCACertificates([...rootCertificates, tlsFixture('ca.pem')]);
    // A bundle that does not hold the test CA (a Mozilla root).
    const network = createNetwork({ tls: { extraCa: [rootCertificates[0]!] } });
    try {
      const byUndici = await network.direct.request({ origin: server.url, path: '/', method: 'GET' });
      expect(await byUndici.body.text()).toBe('ok');
      const url = new URL(server.url);
      const status = await new Promise<number | undefined>((resolve, reject) =>
        get(url, { agent: network.agentFor(url) }, (res) => {
          res.resume();
          resolve(res.statusCode);
        }).on('error', reject),
      );
      expect(status).toBe(200);
    } finally {
      await network.close();
    }
  });
});
