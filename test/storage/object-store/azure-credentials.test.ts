/** Tests of the Azure Blob URL rules and credentials: what a URL names, which credential it gets, secrets hidden. */
import { AnonymousCredential, StorageSharedKeyCredential } from '@azure/storage-blob';
import { isLeft } from 'fp-ts/Either';
import { redact } from '../../../src/core/redact';
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import {
  azureCredentialFor,
  azureCredentialsFromEnv,
  type AzureTokenCredential,
} from '../../../src/storage/object-store/azure-credentials';
import { parseAzureBlobUri, type AzureBlobUri } from '../../../src/storage/object-store/azure-blob-uri';
import { secretValues } from '../../helpers/secrets';

const parsed = (uri: string, endpoints: ReadonlyArray<string> = []): AzureBlobUri => {
  const result = parseAzureBlobUri(uri, endpoints);
  if (isLeft(result)) throw new Error(result.left);
  return result.right;
};

const leftOf = (uri: string): string => {
  const result = parseAzureBlobUri(uri, []);
  if (!isLeft(result)) throw new Error(`${uri} parsed`);
  return result.left;
};

const fakeToken: AzureTokenCredential = {
  getToken: () => Promise.resolve({ token: 'not-a-real-token', expiresOnTimestamp: Date.now() + 60_000 }),
};

describe('parseAzureBlobUri', () => {
  it('reads account, container and prefix from an account host, and the SAS from the query', () => {
    expect(parsed('https://acct.blob.core.windows.net/models/m1/v%202?sv=2024&sig=abc%3D')).toEqual({
      serviceUrl: 'https://acct.blob.core.windows.net',
      account: 'acct',
      container: 'models',
      prefix: 'm1/v 2',
      sas: 'sv=2024&sig=abc%3D',
      display: 'https://acct.blob.core.windows.net/models/m1/v%202',
    });
  });

  // Azure DNS zone endpoints, which KServe's initializer takes as Azure Blob (`_AZURE_BLOB_RE`) since 0.14.
  it('reads account, container and prefix from an Azure DNS zone endpoint (<account>.z<NN>.blob.storage.azure.net)', () => {
    expect(parsed('https://acct.z13.blob.storage.azure.net/models/m1')).toMatchObject({
      serviceUrl: 'https://acct.z13.blob.storage.azure.net',
      account: 'acct',
      container: 'models',
      prefix: 'm1',
    });
    expect(parsed('https://acct.z1.blob.storage.azure.net/models/m1').account).toBe('acct');
    expect(azureBlobStorage().claims('https://acct.z07.blob.storage.azure.net/models/m1')).toBe(true);
    for (const other of [
      'https://acct.z123.blob.storage.azure.net/models/m1',
      'https://acct.blob.storage.azure.net/models/m1',
      'https://acct.zz.blob.storage.azure.net/models/m1',
      'http://acct.z13.blob.storage.azure.net/models/m1',
      'https://acct.z13.blob.storage.azure.net.example.com/models/m1',
    ])
      expect(azureBlobStorage().claims(other)).toBe(false);
  });

  it('reads the account from the path under a configured endpoint (azurite)', () => {
    expect(
      parsed('http://127.0.0.1:10000/devstoreaccount1/models/m1', ['http://127.0.0.1:10000']),
    ).toMatchObject({
      serviceUrl: 'http://127.0.0.1:10000/devstoreaccount1',
      account: 'devstoreaccount1',
      container: 'models',
      prefix: 'm1',
    });
  });

  it('reads the account from the host on a subdomain of a configured endpoint (Azure Stack Hub)', () => {
    const endpoints = ['https://blob.local.azurestack.external'];
    expect(parsed('https://acct.blob.local.azurestack.external/models/m1', endpoints)).toMatchObject({
      serviceUrl: 'https://acct.blob.local.azurestack.external',
      account: 'acct',
      container: 'models',
      prefix: 'm1',
    });
    expect(isLeft(parseAzureBlobUri('http://acct.blob.local.azurestack.external/models/m1', endpoints))).toBe(
      true,
    );
  });

  it('takes a whole container when the URL names no prefix', () => {
    expect(parsed('https://acct.blob.core.windows.net/models')).toMatchObject({
      container: 'models',
      prefix: '',
    });
  });

  it.each([
    ['no container', 'https://acct.blob.core.windows.net/', /no container/],
    ['a container name Azure cannot have', 'https://acct.blob.core.windows.net/Models/m1', /no container/],
    ['an account name Azure cannot have', 'https://a.blob.core.windows.net/models/m1', /storage account/],
    ['user info', 'https://user:pw-secret@acct.blob.core.windows.net/models/m1', /user info/],
    ['bad percent-encoding', 'https://acct.blob.core.windows.net/models/m%zz', /percent-encoding/],
  ])('refuses %s, never quoting a secret', (_label, uri, message) => {
    const left = leftOf(uri);
    expect(left).toMatch(message);
    expect(left).not.toContain('pw-secret');
  });
});

describe('azureCredentialFor', () => {
  const target = parsed('https://acct.blob.core.windows.net/models/m1');
  const key = Buffer.alloc(64, 1).toString('base64');

  it('prefers the SAS in the URL to every other credential', () => {
    const withSas = parsed('https://acct.blob.core.windows.net/models/m1?sv=1&sig=x');
    const chosen = azureCredentialFor(withSas, {
      accountKey: key,
      sasToken: 'sv=2&sig=y',
      tokenCredential: fakeToken,
    });
    expect(chosen).toMatchObject({ sas: 'sv=1&sig=x', source: 'the SAS in the URL' });
    expect(chosen.credential).toBeInstanceOf(AnonymousCredential);
  });

  it("takes a connection string's key only for its own account", () => {
    const connectionString = `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${key};EndpointSuffix=core.windows.net`;
    const chosen = azureCredentialFor(target, { connectionString });
    expect(chosen.source).toBe('the connection string');
    expect(chosen.credential).toBeInstanceOf(StorageSharedKeyCredential);
    expect((chosen.credential as StorageSharedKeyCredential).accountName).toBe('acct');
    const other = azureCredentialFor(parsed('https://other.blob.core.windows.net/models/m1'), {
      connectionString,
    });
    expect(other.source).toBe('no credentials');
    const elsewhere = parsed('http://127.0.0.1:10000/acct/models/m1', ['http://127.0.0.1:10000']);
    expect(azureCredentialFor(elsewhere, { connectionString }).source).toBe('no credentials');
  });

  it('keeps the key, the SAS token and Azure AD for the account AZURE_STORAGE_ACCOUNT names', () => {
    const other = parsed('https://other.blob.core.windows.net/models/m1');
    for (const credentials of [{ accountKey: key }, { sasToken: 'sv=1' }, { tokenCredential: fakeToken }]) {
      const chosen = azureCredentialFor(other, { account: 'acct', ...credentials });
      expect(chosen.source).toBe('no credentials: those configured are for the account acct');
      expect(chosen.credential).toBeInstanceOf(AnonymousCredential);
      expect(chosen.sas).toBeUndefined();
    }
    const unbound = azureCredentialFor(target, { sasToken: 'sv=1' });
    expect(unbound.source).toBe(
      'no credentials: AZURE_STORAGE_SAS_TOKEN is sent only with AZURE_STORAGE_ACCOUNT',
    );
    expect(unbound.sas).toBeUndefined();
  });

  it("takes a connection string's SAS when it has no key", () => {
    const chosen = azureCredentialFor(target, {
      connectionString: 'AccountName=acct;SharedAccessSignature=sv=1&sig=z',
    });
    expect(chosen).toMatchObject({ sas: 'sv=1&sig=z', source: 'the connection string' });
  });

  it('then the account key, then the SAS token, then Azure AD, then nothing', () => {
    expect(
      azureCredentialFor(target, { accountKey: key, sasToken: 'sv=1', tokenCredential: fakeToken }).source,
    ).toBe('the account key');
    expect(
      azureCredentialFor(target, { account: 'acct', sasToken: 'sv=1', tokenCredential: fakeToken }).source,
    ).toBe('AZURE_STORAGE_SAS_TOKEN');
    expect(azureCredentialFor(target, { tokenCredential: fakeToken })).toMatchObject({
      source: 'Azure AD',
      credential: fakeToken,
    });
    expect(azureCredentialFor(target, {}).credential).toBeInstanceOf(AnonymousCredential);
  });
});

describe('azureCredentialFor with a static access token (AZURE_ACCESS_TOKEN, as KServe 0.19 agent reads it)', () => {
  const accessToken = { token: 'static-bearer-token', serviceUrl: 'https://acct.blob.core.windows.net' };
  const target = (): AzureBlobUri => parsed('https://acct.blob.core.windows.net/models/m1');

  it('sends the token to the blob service it is for, as a bearer token that does not expire on its own', async () => {
    const chosen = azureCredentialFor(target(), { accessToken });
    expect(chosen.source).toBe('AZURE_ACCESS_TOKEN');
    const token = await (chosen.credential as AzureTokenCredential).getToken(
      'https://storage.azure.com/.default',
    );
    expect(token?.token).toBe('static-bearer-token');
    expect(token?.expiresOnTimestamp).toBeGreaterThan(Date.now());
  });

  it('sends it to no other account or endpoint, and after the account key', () => {
    for (const other of [
      'https://other.blob.core.windows.net/models/m1',
      'https://acct.blob.core.chinacloudapi.cn/models/m1',
    ]) {
      const chosen = azureCredentialFor(parsed(other), { accessToken });
      expect(chosen.credential).toBeInstanceOf(AnonymousCredential);
      expect(chosen.source).toBe(
        'no credentials: AZURE_ACCESS_TOKEN is for https://acct.blob.core.windows.net',
      );
    }
    const key = Buffer.alloc(64, 1).toString('base64');
    expect(azureCredentialFor(target(), { accessToken, accountKey: key }).source).toBe('the account key');
    const unbound = azureCredentialFor(target(), { accessToken: { token: 't' } });
    expect(unbound.source).toBe(
      'no credentials: AZURE_ACCESS_TOKEN is sent only with AZURE_ACCOUNT_NAME or AZURE_SERVICE_URL',
    );
  });

  it('refuses to send it over plain http', async () => {
    const plain = azureBlobStorage({
      endpoints: ['http://127.0.0.1:10000'],
      credentials: { accessToken: { token: 't', serviceUrl: 'http://127.0.0.1:10000/acct' } },
    });
    await expect(
      plain.download('http://127.0.0.1:10000/acct/models/m1', '/nonexistent', new AbortController().signal),
    ).rejects.toMatchObject({
      kind: 'invalid-uri',
      message: expect.stringContaining('only sent over https') as unknown,
    });
  });
});

describe('azureCredentialsFromEnv', () => {
  const noToken = (): AzureTokenCredential => {
    throw new Error('Azure AD was not asked for');
  };

  it("reads KServe's and the az CLI's names, and hides every value from then on", () => {
    const { accountKey, sasSignature } = secretValues();
    const sas = `sv=2024-01-01&sig=${encodeURIComponent(sasSignature)}`;
    const credentials = azureCredentialsFromEnv(
      {
        AZURE_STORAGE_ACCOUNT: 'Acct',
        AZURE_STORAGE_ACCESS_KEY: accountKey,
        AZURE_STORAGE_SAS_TOKEN: `?${sas}`,
      },
      noToken,
    );
    expect(credentials).toEqual({ account: 'acct', accountKey, sasToken: sas });
    expect(redact(`key ${accountKey} sas ${sas}`)).not.toContain(accountKey);
    expect(redact(`sas ${sas}`)).not.toContain(encodeURIComponent(sasSignature));
    expect(azureCredentialsFromEnv({ AZURE_STORAGE_KEY: accountKey }, noToken)).toEqual({ accountKey });
  });

  it("hides a connection string's key and the client secret", () => {
    const { accountKey, token } = secretValues();
    azureCredentialsFromEnv(
      {
        AZURE_STORAGE_CONNECTION_STRING: `AccountName=acct;AccountKey=${accountKey}`,
        AZURE_CLIENT_SECRET: token,
      },
      noToken,
    );
    expect(redact(`${accountKey} ${token}`)).toBe('[REDACTED] [REDACTED]');
  });

  it.each([
    [
      'AZURE_CLIENT_ID',
      { AZURE_CLIENT_ID: 'id', AZURE_TENANT_ID: 't', AZURE_CLIENT_SECRET: 'client-secret' },
    ],
    ['AZURE_FEDERATED_TOKEN_FILE', { AZURE_FEDERATED_TOKEN_FILE: '/var/run/secrets/azure/tokens/token' }],
    ['AZURE_STORAGE_AUTH_MODE=login', { AZURE_STORAGE_AUTH_MODE: 'login' }],
  ])('uses Azure AD (DefaultAzureCredential) when %s is set', (_label, env) => {
    expect(azureCredentialsFromEnv(env, () => fakeToken)).toEqual({ tokenCredential: fakeToken });
  });

  it("reads KServe's AZURE_ACCESS_TOKEN for AZURE_SERVICE_URL, else AZURE_ACCOUNT_NAME's blob service, hiding it", () => {
    const { token } = secretValues();
    expect(
      azureCredentialsFromEnv(
        { AZURE_ACCESS_TOKEN: token, AZURE_SERVICE_URL: 'https://acct.blob.core.windows.net/' },
        noToken,
      ),
    ).toEqual({ accessToken: { token, serviceUrl: 'https://acct.blob.core.windows.net' } });
    expect(
      azureCredentialsFromEnv({ AZURE_ACCESS_TOKEN: token, AZURE_ACCOUNT_NAME: 'acct' }, noToken),
    ).toEqual({
      accessToken: { token, serviceUrl: 'https://acct.blob.core.windows.net' },
    });
    expect(azureCredentialsFromEnv({ AZURE_ACCESS_TOKEN: token }, noToken)).toEqual({
      accessToken: { token },
    });
    expect(redact(`token ${token}`)).toBe('token [REDACTED]');
  });

  // KServe's initializer asks Azure AD only for a non-empty AZURE_CLIENT_ID (`if not client_id: return None`); a
  // Secret's blank key made DefaultAzureCredential fail a public container's model for good.
  it('takes a blank AZURE_CLIENT_ID or AZURE_FEDERATED_TOKEN_FILE as unset', () => {
    expect(
      azureCredentialsFromEnv({ AZURE_CLIENT_ID: '', AZURE_FEDERATED_TOKEN_FILE: ' ' }, noToken),
    ).toEqual({});
  });

  it('uses nothing when nothing is set (anonymous: a public container)', () => {
    expect(azureCredentialsFromEnv({ HOME: '/root' }, noToken)).toEqual({});
  });
});
