/**
 * KServe's CA bundle ConfigMap (`caBundleConfigMapName`, mounted as `$CA_BUNDLE_VOLUME_MOUNT_POINT/cabundle.crt`):
 * KServe's storage initializer trusts it for every download (kserve_storage.py `_configure_global_ca_bundle`:
 * https, hf, GCS, Azure; S3 through its own AWS_CA_BUNDLE), on top of the default roots, best effort.
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

const tmp = useTempDir('kserve-ca-bundle');
const never = new AbortController().signal;

/** The env KServe's webhook sets with a CA bundle ConfigMap mounted at `mount`. */
const caBundleEnv = (mount: string): Env => ({
  CA_BUNDLE_CONFIGMAP_NAME: 'odh-trusted-ca-bundle',
  CA_BUNDLE_VOLUME_MOUNT_POINT: mount,
});

describe("storageRouter: KServe's CA bundle ConfigMap", () => {
  const serve = useHttpServers();

  const routerWith = (env: Env) => {
    const sink = new LogSink();
    const router = storageRouter(defaultAppConfig, pino(sink), env);
    if (E.isLeft(router)) throw new Error(router.left);
    return { router: router.right, sink };
  };

  it('trusts cabundle.crt for https:// downloads, as KServe’s initializer does, and not for the model server', async () => {
    const server = await serve(
      (_req, res) => void res.writeHead(200, { 'content-length': 7 }).end('weights'),
      {
        tls: serverTls(),
      },
    );
    const mount = join(tmp.path, 'custom-certs');
    await mkdir(mount, { recursive: true });
    await writeFile(join(mount, 'cabundle.crt'), tlsFixture('ca.pem'));
    const { router } = routerWith(caBundleEnv(mount));
    const target = join(tmp.path, 'https-target');
    await mkdir(target);
    await router.download(`${server.url}/model.bin`, target, never);
    expect(await readFile(join(target, 'model.bin'), 'utf8')).toBe('weights');
    // The model server's client (the Network the router hands on) keeps the roots it was given.
    const asked = await router.network.direct
      .request({ origin: server.url, path: '/model.bin', method: 'GET' })
      .then(
        () => 'answered',
        (cause: unknown) => String(cause),
      );
    expect(asked).toMatch(/certificate/);
    await router.network.close();
  });

  it('starts on a cabundle.crt it cannot read, with one warn line naming it, https:// on the default roots', async () => {
    const mount = join(tmp.path, 'empty-mount');
    await mkdir(mount, { recursive: true });
    const { router, sink } = routerWith(caBundleEnv(mount));
    const file = join(mount, 'cabundle.crt');
    expect(
      sink.withMessage(`CA_BUNDLE_CONFIGMAP_NAME: cannot read the CA bundle ${file}: ENOENT`),
    ).toHaveLength(1);
    const server = await serve((_req, res) => void res.writeHead(200, { 'content-length': 2 }).end('ok'), {
      tls: serverTls(),
    });
    const target = join(tmp.path, 'unread-target');
    await mkdir(target);
    await expect(router.download(`${server.url}/model.bin`, target, never)).rejects.toThrow(/certificate/);
    await router.network.close();
  });
});
