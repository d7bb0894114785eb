/**
 * REQUESTS_CA_BUNDLE (else CURL_CA_BUNDLE): the CA file python-requests trusts, so KServe's storage initializer for
 * its https, hf, GCS and Azure downloads (S3's boto3 reads AWS_CA_BUNDLE). modelsync trusts it for those downloads,
 * on top of the default CAs; not for S3, nor the model server.
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

const tmp = useTempDir('requests-ca-bundle');
const never = new AbortController().signal;

describe('storageRouter: REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE', () => {
  const serve = useHttpServers();

  const routerWith = (env: Env) => {
    const sink = new LogSink();
    const router = storageRouter(defaultAppConfig, pino(sink), env);
    if (E.isLeft(router)) throw new Error(router.left);
    return { router: router.right, sink };
  };

  it.each(['REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE'])(
    'trusts the CAs of %s for https:// downloads, as KServe’s initializer (requests) does, not for the model server',
    async (name) => {
      const server = await serve(
        (_req, res) => void res.writeHead(200, { 'content-length': 7 }).end('weights'),
        {
          tls: serverTls(),
        },
      );
      const file = join(tmp.path, `${name}.crt`);
      await writeFile(file, tlsFixture('ca.pem'));
      const { router } = routerWith({ [name]: file });
      try {
        const target = join(tmp.path, `${name}-target`);
        await mkdir(target);
        await router.download(`${server.url}/model.bin`, target, never);
        expect(await readFile(join(target, 'model.bin'), 'utf8')).toBe('weights');
        const asked = await router.network.direct
          .request({ origin: server.url, path: '/', method: 'GET' })
          .then(
            () => 'answered',
            (cause: unknown) => String(cause),
          );
        expect(asked).toMatch(/certificate/);
      } finally {
        await router.network.close();
      }
    },
  );

  it('starts on a REQUESTS_CA_BUNDLE it cannot read, with one warn line naming it', async () => {
    const file = join(tmp.path, 'missing.crt');
    const { router, sink } = routerWith({ REQUESTS_CA_BUNDLE: file });
    expect(sink.withMessage(`REQUESTS_CA_BUNDLE: cannot read the CA bundle ${file}: ENOENT`)).toHaveLength(1);
    await router.network.close();
  });
});
