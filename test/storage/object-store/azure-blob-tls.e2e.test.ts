/** Tests of the Azure Blob provider against azurite over https: the CA bundle through the Network, Azure AD tokens. */
import { createNetwork } from '../../../src/net/network';
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import {
  type AzureCredentials,
  type AzureTokenCredential,
} from '../../../src/storage/object-store/azure-credentials';
import { effectError } from '../../helpers/effect-error';
import { selfSignedCertificate, useAzurite } from '../../helpers/azurite';
import { listTree } from '../../helpers/file-tree';
import { removeTempDir, tempDir, useTempDir } from '../../helpers/temp-dir';

let certificate: Awaited<ReturnType<typeof selfSignedCertificate>>;
let certificateDir: string;
beforeAll(async () => {
  certificateDir = await tempDir('azurite-tls');
  certificate = await selfSignedCertificate(certificateDir);
});
afterAll(() => removeTempDir(certificateDir));

const azurite = useAzurite(() => ({ tls: certificate, oauth: true }));
const staging = useTempDir('azure-tls');
const never = new AbortController().signal;

const base64url = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An Azure AD access token as azurite's basic OAuth checks it: audience, issuer, lifetime (not the signature). */
const accessToken = (lifetime: { readonly from: number; readonly to: number }): string => {
  const header = base64url({ alg: 'RS256', typ: 'JWT' });
  const payload = base64url({
    aud: 'https://storage.azure.com',
    iss: 'https://sts.windows.net/00000000-0000-0000-0000-000000000000/',
    iat: Math.floor(lifetime.from / 1000),
    nbf: Math.floor(lifetime.from / 1000),
    exp: Math.floor(lifetime.to / 1000),
  });
  return `${header}.${payload}.${base64url({ signature: 'unchecked' })}`;
};

const tokenCredential = (token: () => Promise<string>): AzureTokenCredential => ({
  getToken: async () => ({ token: await token(), expiresOnTimestamp: Date.now() + 600_000 }),
});

const urlOf = (prefix: string) => `${azurite.current.url}/${azurite.current.account}/models/${prefix}`;

/** Downloads m1 with `credentials` through a Network that trusts azurite's certificate (or, `trusting: false`, not). */
const download = async (credentials: AzureCredentials, trusting = true): Promise<void> => {
  const network = createNetwork(trusting ? { tls: { extraCa: [certificate.pem] } } : {});
  try {
    await azureBlobStorage({
      endpoints: [azurite.current.url],
      credentials,
      agentFor: (url) => network.agentFor(url),
      sdkRetries: 0,
    }).download(urlOf('m1'), staging.path, never);
  } finally {
    await network.close();
  }
};

beforeAll(() => azurite.current.put('models', { 'm1/weights.bin': 'weights over https' }));

describe('azureBlobStorage over https', () => {
  it('reads with an Azure AD token, trusting the server through the CA bundle of the Network', async () => {
    const now = Date.now();
    const token = tokenCredential(() =>
      Promise.resolve(accessToken({ from: now - 60_000, to: now + 600_000 })),
    );
    await download({ tokenCredential: token });
    expect(await listTree(staging.path)).toEqual(['weights.bin']);
  });

  it('fails without the CA bundle: the self-signed server is not trusted', async () => {
    const error = await effectError(download({ accountKey: azurite.current.accountKey }, false));
    expect(error.message).toMatch(/certificate/);
  });

  it('fails permanently with HTTP 401 or 403 for an expired token', async () => {
    const now = Date.now();
    const expired = tokenCredential(() =>
      Promise.resolve(accessToken({ from: now - 7_200_000, to: now - 3_600_000 })),
    );
    const error = await effectError(download({ tokenCredential: expired }));
    expect(error).toMatchObject({ kind: 'http-status', retryable: false });
    expect([401, 403]).toContain(error.status);
  });

  it('fails permanently with refused when no Azure AD credential is available', async () => {
    const unavailable = tokenCredential(() => {
      const error = new Error(
        'EnvironmentCredential is unavailable. No underlying credential could be used.',
      );
      error.name = 'CredentialUnavailableError';
      return Promise.reject(error);
    });
    const error = await effectError(download({ tokenCredential: unavailable }));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('no Azure AD credential');
  });

  it('refuses to send an Azure AD token over plain http', async () => {
    const token = tokenCredential(() => Promise.resolve('never-sent-token'));
    const error = await effectError(
      azureBlobStorage({
        endpoints: ['http://127.0.0.1:10000'],
        credentials: { tokenCredential: token },
      }).download('http://127.0.0.1:10000/acct/models/m1', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).toContain('only sent over https');
  });
});
