/**
 * The CA files trusted beside a Network's own (src/wiring/ca-trust.ts), each for the remotes KServe's client that
 * reads it trusts it for, on top of the default CAs, best effort (a file that cannot be read: one warn line):
 * - KServe's CA bundle ConfigMap (`caBundleConfigMapName`, mounted as `$CA_BUNDLE_VOLUME_MOUNT_POINT/cabundle.crt`):
 *   KServe's storage initializer trusts it for every download (kserve_storage.py `_configure_global_ca_bundle`:
 *   https, hf, GCS, Azure; S3 through its own AWS_CA_BUNDLE).
 * - REQUESTS_CA_BUNDLE (else CURL_CA_BUNDLE): what python-requests trusts, so KServe's storage initializer for its
 *   https, hf, GCS and Azure downloads (S3's boto3 reads AWS_CA_BUNDLE); not for S3, nor the model server.
 * - SSL_CERT_FILE: what KServe's agent (Go: crypto/x509 reads it as the system store) and OpenSSL clients trust. Node
 *   reads it only under --use-openssl-ca or --use-system-ca, and not at all once a client is given CAs of its own;
 *   modelsync trusts it for storage and the model server alike.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as E from 'fp-ts/Either';
import pino from 'pino';
import type { Env } from '../../src/core/env';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { storageRouter, type StorageRouter } from '../../src/wiring/storage';
import { useHttpServers } from '../helpers/http-servers';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { serverTls, tlsFixture } from '../helpers/tls';

const tmp = useTempDir('ca-trust');
const never = new AbortController().signal;

/** The env KServe's webhook sets with a CA bundle ConfigMap mounted at `mount`. */
const caBundleEnv = (mount: string): Env => ({
  CA_BUNDLE_CONFIGMAP_NAME: 'odh-trusted-ca-bundle',
  CA_BUNDLE_VOLUME_MOUNT_POINT: mount,
});

describe('storageRouter: CA files beside the Network’s own', () => {
  const serve = useHttpServers();

  const routerWith = (env: Env) => {
    const sink = new LogSink();
    const router = storageRouter(defaultAppConfig, pino(sink), env);
    if (E.isLeft(router)) throw new Error(router.left);
    return { router: router.right, sink };
  };

  /** An https server of the test CA, answering every request with `weights`. */
  const weightsServer = () =>
    serve((_req, res) => void res.writeHead(200, { 'content-length': 7 }).end('weights'), {
      tls: serverTls(),
    });

  /** Downloads `url/model.bin` into a fresh dir named `name`; returns the file's text. */
  const downloaded = async (router: StorageRouter, url: string, name: string): Promise<string> => {
    const target = join(tmp.path, name);
    await mkdir(target);
    await router.download(`${url}/model.bin`, target, never);
    return readFile(join(target, 'model.bin'), 'utf8');
  };

  /** What the model server's client (the Network the router hands on) makes of `url`: 'answered' or its failure. */
  const modelServerAsk = (router: StorageRouter, url: string): Promise<string> =>
    router.network.direct.request({ origin: url, path: '/', method: 'GET' }).then(
      async (answer) => `answered ${await answer.body.text()}`,
      (cause: unknown) => String(cause),
    );

  describe("KServe's CA bundle ConfigMap", () => {
    it('trusts cabundle.crt for https:// downloads, as KServe’s initializer does, and not for the model server', async () => {
      const server = await weightsServer();
      const mount = join(tmp.path, 'custom-certs');
      await mkdir(mount, { recursive: true });
      await writeFile(join(mount, 'cabundle.crt'), tlsFixture('ca.pem'));
      const { router } = routerWith(caBundleEnv(mount));
      try {
        expect(await downloaded(router, server.url, 'https-target')).toBe('weights');
        // The model server's client keeps the roots it was given.
        expect(await modelServerAsk(router, server.url)).toMatch(/certificate/);
      } finally {
        await router.network.close();
      }
    });

    it('starts on a cabundle.crt it cannot read, with one warn line naming it, https:// on the default roots', async () => {
      const mount = join(tmp.path, 'empty-mount');
      await mkdir(mount, { recursive: true });
      const { router, sink } = routerWith(caBundleEnv(mount));
      const file = join(mount, 'cabundle.crt');
      try {
        expect(
          sink.withMessage(`CA_BUNDLE_CONFIGMAP_NAME: cannot read the CA bundle ${file}: ENOENT`),
        ).toHaveLength(1);
        const server = await weightsServer();
        await expect(downloaded(router, server.url, 'unread-target')).rejects.toThrow(/certificate/);
      } finally {
        await router.network.close();
      }
    });
  });

  describe('REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE', () => {
    it.each(['REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE'])(
      'trusts the CAs of %s for https:// downloads, as KServe’s initializer (requests) does, not for the model server',
      async (name) => {
        const server = await weightsServer();
        const file = join(tmp.path, `${name}.crt`);
        await writeFile(file, tlsFixture('ca.pem'));
        const { router } = routerWith({ [name]: file });
        try {
          expect(await downloaded(router, server.url, `${name}-target`)).toBe('weights');
          expect(await modelServerAsk(router, server.url)).toMatch(/certificate/);
        } finally {
          await router.network.close();
        }
      },
    );

    it('starts on a REQUESTS_CA_BUNDLE it cannot read, with one warn line naming it', async () => {
      const file = join(tmp.path, 'missing-requests.crt');
      const { router, sink } = routerWith({ REQUESTS_CA_BUNDLE: file });
      expect(sink.withMessage(`REQUESTS_CA_BUNDLE: cannot read the CA bundle ${file}: ENOENT`)).toHaveLength(
        1,
      );
      await router.network.close();
    });
  });

  describe('SSL_CERT_FILE', () => {
    it('trusts the CAs of SSL_CERT_FILE for https:// downloads and the model server, as KServe’s agent does', async () => {
      const server = await weightsServer();
      const file = join(tmp.path, 'ca-certificates.crt');
      await writeFile(file, tlsFixture('ca.pem'));
      const { router } = routerWith({ SSL_CERT_FILE: file });
      try {
        expect(await downloaded(router, server.url, 'ssl-cert-file-target')).toBe('weights');
        expect(await modelServerAsk(router, server.url)).toBe('answered weights');
      } finally {
        await router.network.close();
      }
    });

    it('starts on an SSL_CERT_FILE it cannot read, with one warn line naming it', async () => {
      const file = join(tmp.path, 'missing-ssl.crt');
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
});
