/**
 * Credentials sent astray by a redirect: the TorchServe token (`--torchserve-token-file`) and S3 signatures and
 * keys. Neither client follows a redirect, so a management API or an S3 endpoint answering 301/302/307 to another
 * port or host fails clearly, and the server it points at hears nothing at all.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelName } from '../../../src/core/model-name';
import { torchServeModelServer } from '../../../src/model-server/torchserve';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { s3Storage } from '../../../src/storage/object-store/s3';
import type { HttpHandler } from '../../../src/testing/http-server';
import { effectError } from '../../helpers/effect-error';
import { authHeaders, recording } from '../../helpers/elsewhere';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';

const never = new AbortController().signal;
const redirectTo =
  (location: string, status: number): HttpHandler =>
  (req, res) =>
    void res.writeHead(status, { location: `${location}${req.url ?? ''}` }).end();
const ok: HttpHandler = (_req, res) =>
  void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');

describe.each([301, 302, 307, 308])('a %i from the model server or the store', (status) => {
  const serve = useHttpServers();
  const tmp = useTempDir('credentials-redirects');

  it.each(['another port', 'another host'])(
    'TorchServe: to %s, the token is not sent there',
    async (where) => {
      const elsewhere = recording(ok);
      const other = await serve(elsewhere.handler);
      const target = where === 'another port' ? other.url : other.url.replace('127.0.0.1', 'localhost');
      const management = recording(redirectTo(target, status));
      const server = await serve(management.handler);
      const tokenFile = join(tmp.path, 'key_file.json');
      await writeFile(tokenFile, JSON.stringify({ management: { key: 'ts-management-key-3e9a' } }));
      const client = torchServeModelServer({ baseUrl: server.url, tokenFile, timeoutMs: 5000 });

      const error = await effectError(client.load('m' as ModelName, false, never));
      expect(error.message).toContain(String(status));
      // The management API itself got the token: the test would show a redirect that carried it.
      expect(authHeaders(management.heard[0]!)).toEqual({ authorization: 'Bearer ts-management-key-3e9a' });
      await effectError(client.loadedModels(never));
      expect(elsewhere.heard).toEqual([]);
    },
  );

  it.each(['another port', 'another host'])('S3: to %s, no signature or key is sent there', async (where) => {
    const elsewhere = recording(ok);
    const other = await serve(elsewhere.handler);
    const target = where === 'another port' ? other.url : other.url.replace('127.0.0.1', 'localhost');
    const store = recording(redirectTo(target, status));
    const server = await serve(store.handler);
    const storage = s3Storage({
      endpoint: server.url,
      region: 'us-east-1',
      addressing: 'path',
      credentials: s3Credentials(
        { anonymous: false },
        { AWS_ACCESS_KEY_ID: 'AKIAREDIRECTTEST0001', AWS_SECRET_ACCESS_KEY: 'redirect-secret-key-5b7f' },
      ),
      maxAttempts: 1,
    });
    const dir = join(tmp.path, 'model');
    await mkdir(dir);

    const error = await effectError(storage.download('s3://bucket/m', dir, never));
    expect(error.kind).not.toBe('unknown');
    expect(String(store.heard[0]?.headers['authorization'])).toContain('AKIAREDIRECTTEST0001');
    expect(elsewhere.heard).toEqual([]);
  });
});
