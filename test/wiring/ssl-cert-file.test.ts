/**
 * SSL_CERT_FILE: the CA file KServe's agent (Go: crypto/x509 reads it as the system store) and OpenSSL clients trust.
 * Node reads it only under --use-openssl-ca or --use-system-ca, and not at all once a client is given CAs of its own;
 * modelsync trusts it on top of the default CAs for storage and the model server alike.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as E from 'fp-ts/Either';
import pino from 'pino';
import type { Env } from '../../src/core/env';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { storageRouter } from '../../src/wiring/storage';
import { useHttpServers } from '../helpers/http-servers';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { serverTls, tlsFixture } from '../helpers/tls';

const tmp = useTempDir('ssl-cert-file');
const never = new AbortController().signal;

describe('storageRouter: SSL_CERT_FILE', () => {
  const serve = useHttpServers();

  const routerWith = (env: Env) => {
    const sink = new LogSink();
    const router = storageRouter(defaultAppConfig, pino(sink), env);
    if (E.isLeft(router)) throw new Error(router.left);
    return { router: router.right, sink };
  };

  it('trusts the CAs of SSL_CERT_FILE for https:// downloads and the model server, as KServe’s agent does', async () => {
    const server = await serve(
      (_req, res) => void res.writeHead(200, { 'content-length': 7 }).end('weights'),
      {
        tls: serverTls(),
      },
    );
    const file = join(tmp.path, 'ca-certificates.crt');
    await writeFile(file, tlsFixture('ca.pem'));
    const { router } = routerWith({ SSL_CERT_FILE: file });
    try {
      const target = join(tmp.path, 'target');
      await mkdir(target);
      await router.download(`${server.url}/model.bin`, target, never);
      expect(await readFile(join(target, 'model.bin'), 'utf8')).toBe('weights');
      const answer = await router.network.direct.request({ origin: server.url, path: '/', method: 'GET' });
      expect(await answer.body.text()).toBe('weights');
    } finally {
      await router.network.close();
    }
  });

  it('starts on an SSL_CERT_FILE it cannot read, with one warn line naming it', async () => {
    const file = join(tmp.path, 'missing.crt');
    const { router, sink } = routerWith({ SSL_CERT_FILE: file });
    expect(sink.withMessage(`SSL_CERT_FILE: cannot read the CA bundle ${file}: ENOENT`)).toHaveLength(1);
    await router.network.close();
  });

  // An environment often names one bundle in both (this machine's does): read again, it cost the heap ~0.6 MiB.
  it('does not read an SSL_CERT_FILE that is the file of NODE_EXTRA_CA_CERTS, which Node trusts already', async () => {
    const file = join(tmp.path, 'both.crt');
    await writeFile(file, 'no certificate here: were it read, a warn line would say so');
    const { router, sink } = routerWith({ SSL_CERT_FILE: file, NODE_EXTRA_CA_CERTS: file });
    expect(sink.withMessage('SSL_CERT_FILE')).toEqual([]);
    await router.network.close();
  });
});
