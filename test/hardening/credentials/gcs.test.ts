/**
 * Credentials sent astray, GCS: an access token (from a workload identity token exchange) and a service account
 * key's self-signed token go only to the configured endpoint. A list or a read answered with a redirect to another
 * port, another name of the address or from https to http is refused, not followed; a token exchange redirected
 * elsewhere carries its subject token nowhere.
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { createNetwork } from '../../../src/net';
import { gcsStorage } from '../../../src/storage/object-store/gcs';
import type { HttpHandler } from '../../../src/testing/http-server';
import { effectError } from '../../helpers/effect-error';
import { recording, type Ear } from '../../helpers/elsewhere';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';
import { serverTls, tlsFixture } from '../../helpers/tls';

const tls = tlsFixture;
const tlsOptions = serverTls();
const network = createNetwork({ tls: { extraCa: [tls('ca.pem')] } });
afterAll(() => network.close());

const accessToken = 'ya29.origin-access-token-7c1e5a9b3d';
const subjectToken = 'subject-token-of-the-pod-4b8d2f6a0c';
const never = new AbortController().signal;

const json = (status: number, body: unknown): HttpHandler => {
  const text = JSON.stringify(body);
  return (_req, res) =>
    void res
      .writeHead(status, { 'content-type': 'application/json', 'content-length': text.length })
      .end(text);
};
const tokenAnswer = json(200, {
  access_token: accessToken,
  issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  token_type: 'Bearer',
  expires_in: 3600,
});
const listing = json(200, {
  kind: 'storage#objects',
  items: [{ name: 'm1/a.bin', size: '3', generation: '7' }],
});
const redirect =
  (location: string, status: number): HttpHandler =>
  (_req, res) =>
    void res.writeHead(status, { location }).end();

/** The credentials file of one kind, its token exchange (if any) at `tokenUrl`. */
type CredentialsFile = (file: string, tokenUrl: string) => Promise<void>;

const externalAccount: CredentialsFile = async (file, tokenUrl) => {
  const tokenFile = `${file}.subject-token`;
  await writeFile(tokenFile, subjectToken);
  const config = {
    type: 'external_account',
    audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/k8s',
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    token_url: tokenUrl,
    credential_source: { file: tokenFile },
  };
  await writeFile(file, JSON.stringify(config));
};

// Outside Google's universe a key signs its own access token (no token exchange): the bearer is a signed JWT.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const serviceAccountKey: CredentialsFile = async (file, tokenUrl) => {
  const key = {
    type: 'service_account',
    project_id: 'p',
    private_key_id: 'key-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'loader@p.iam.gserviceaccount.com',
    client_id: '1',
    token_uri: tokenUrl,
    universe_domain: 'example.test',
  };
  await writeFile(file, JSON.stringify(key));
};

const kinds = [
  ['an access token from a token exchange', externalAccount],
  ['a service account key', serviceAccountKey],
] as const;

const astray = [
  ['another port of the same host (302)', 302, 'port'],
  ['another port of the same host (307)', 307, 'port'],
  ['another port of the same host (301)', 301, 'port'],
  ['another name of the same address (localhost for 127.0.0.1)', 302, 'name'],
  ['plain http on the same host, from https', 302, 'http'],
] as const;

const byName = (req: IncomingMessage): boolean => (req.headers.host ?? '').startsWith('localhost');

describe('gcsStorage: credentials bound to the GCS endpoint', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('credentials-gcs');

  /** The origin (the configured endpoint) answering `phase` with a redirect `astray`; what each side heard. */
  const redirected = async (
    credentials: CredentialsFile,
    phase: 'list' | 'read',
    status: number,
    where: 'port' | 'name' | 'http',
  ): Promise<{ readonly origin: Ear; readonly elsewhere: Ear; readonly error: Error }> => {
    const elsewhere = recording(listing);
    const other = await serve(elsewhere.handler);
    let originUrl = '';
    const origin = recording((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (phase === 'list' || path !== '/storage/v1/b/models/o') {
        const target = where === 'name' ? originUrl.replace('127.0.0.1', 'localhost') : other.url;
        return redirect(`${target}${req.url ?? '/'}`, status)(req, res);
      }
      return listing(req, res);
    });
    // By name, the redirect reaches the origin server itself: the same socket, another host.
    const server = await serve((req, res) => (byName(req) ? elsewhere : origin).handler(req, res), {
      ...(where === 'http' ? { tls: tlsOptions } : {}),
    });
    originUrl = server.url;
    // The token exchange: a plain http server of its own.
    const tokens = await serve(tokenAnswer);
    const credentialsFile = join(tmp.path, 'credentials.json');
    await credentials(credentialsFile, `${tokens.url}/v1/token`);
    const storage = gcsStorage({ endpoint: server.url, credentialsFile, network });
    const error = await effectError(storage.download('gs://models/m1', join(tmp.path), never));
    return { origin, elsewhere, error };
  };

  describe.each(kinds)('with %s', (_kind, credentials) => {
    it.each(astray)('refuses a list redirected to %s, sending it nothing', async (_label, status, where) => {
      const { origin, elsewhere, error } = await redirected(credentials, 'list', status, where);
      expect(origin.heard.filter((r) => r.method === 'GET').map((r) => r.headers.authorization)).toEqual([
        expect.stringMatching(/^Bearer \S{20,}/),
      ]);
      expect(elsewhere.heard).toEqual([]);
      expect(error).toMatchObject({ kind: 'http-status', status, retryable: false });
      expect(error.message).toContain('not followed');
    });

    it.each(astray)('refuses a read redirected to %s, sending it nothing', async (_label, status, where) => {
      const { origin, elsewhere, error } = await redirected(credentials, 'read', status, where);
      expect(origin.heard.some((r) => r.url.includes('alt=media'))).toBe(true);
      expect(elsewhere.heard).toEqual([]);
      expect(error).toMatchObject({ kind: 'http-status', status });
    });
  });

  it('sends the subject token of a token exchange nowhere a 307 of the token endpoint points', async () => {
    const elsewhere = recording(tokenAnswer);
    const other = await serve(elsewhere.handler);
    const origin = recording((req, res) =>
      req.method === 'POST' ? redirect(`${other.url}/v1/token`, 307)(req, res) : listing(req, res),
    );
    const server = await serve(origin.handler);
    const credentialsFile = join(tmp.path, 'credentials.json');
    await externalAccount(credentialsFile, `${server.url}/v1/token`);
    const storage = gcsStorage({ endpoint: server.url, credentialsFile, network });
    await effectError(storage.download('gs://models/m1', tmp.path, never));
    const exchanges = origin.heard.filter((r) => r.method === 'POST').map((r) => r.body);
    expect(exchanges.length).toBeGreaterThan(0);
    expect(exchanges.every((body) => body.includes(subjectToken))).toBe(true);
    expect(elsewhere.heard).toEqual([]);
  });
});
