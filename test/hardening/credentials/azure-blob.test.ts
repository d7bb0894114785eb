/**
 * Credentials sent astray, Azure Blob: the account key, AZURE_STORAGE_SAS_TOKEN and Azure AD go only to the
 * account AZURE_STORAGE_ACCOUNT names, a connection string's only to its account at its endpoint; a redirect
 * elsewhere gets nothing. Recording servers play the blob service at a configured endpoint (path style).
 */
import { Agent } from 'node:https';
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import type { AzureCredentials } from '../../../src/storage/object-store/azure-credentials';
import type { HttpHandler } from '../../../src/testing/http-server';
import { authHeaders, expectNoneHeard, recording, type Ear } from '../../helpers/elsewhere';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';
import { serverTls, tlsFixture } from '../../helpers/tls';

const tls = tlsFixture;
const trusting = new Agent({ ca: tls('ca.pem') });
afterAll(() => trusting.destroy());

const accountKey = Buffer.from('account-key-of-acct1-0123456789abcdef').toString('base64');
const signature = 'c2FzLXNpZ25hdHVyZS1vZi1hY2N0MQ==';
const sasToken = `sv=2024-08-04&ss=b&srt=co&sp=rl&se=2099-01-01T00%3A00%3A00Z&sig=${encodeURIComponent(signature)}`;
const bearer = 'aad-access-token-9c4e2b7f1a';
const tokenCredential = {
  getToken: () => Promise.resolve({ token: bearer, expiresOnTimestamp: Date.now() + 3_600_000 }),
};
const secrets = [accountKey, signature, bearer];
const never = new AbortController().signal;

/** Azure's answer to a listing of a container that is not there: enough for the SDK to stop. */
const noContainer: HttpHandler = (_req, res) =>
  void res
    .writeHead(404, { 'content-type': 'application/xml', 'x-ms-error-code': 'ContainerNotFound' })
    .end('<?xml version="1.0" encoding="utf-8"?><Error><Code>ContainerNotFound</Code></Error>');

describe('azureBlobStorage: each credential only for its own account', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('credentials-azure');

  /** Lists `<endpoint>/<account>/models/m1` with `credentials`; what the server heard. */
  const listAt = async (
    credentials: AzureCredentials,
    account: string,
    options: { readonly secure?: boolean; readonly handler?: HttpHandler; readonly endpoint?: string } = {},
  ): Promise<Ear> => {
    const ear = recording(options.handler ?? noContainer);
    const server = await serve(ear.handler, options.secure === true ? { tls: serverTls() } : {});
    const storage = azureBlobStorage({
      endpoints: [server.url],
      credentials,
      sdkRetries: 0,
      ...(options.secure === true ? { agentFor: () => trusting } : {}),
    });
    await storage.download(`${server.url}/${account}/models/m1`, tmp.path, never).catch(() => undefined);
    return ear;
  };

  it("sends AZURE_STORAGE_SAS_TOKEN to AZURE_STORAGE_ACCOUNT's URLs", async () => {
    const ear = await listAt({ account: 'acct1', sasToken }, 'acct1');
    expect(ear.heard[0]?.url).toContain(encodeURIComponent(signature));
  });

  it.each([
    ['AZURE_STORAGE_SAS_TOKEN', { account: 'acct1', sasToken }],
    ['AZURE_STORAGE_SAS_TOKEN without AZURE_STORAGE_ACCOUNT', { sasToken }],
    ['the account key', { account: 'acct1', accountKey }],
  ] as const)('sends %s to no other account a URI names', async (_label, credentials) => {
    const ear = await listAt(credentials, 'acct2');
    expectNoneHeard(ear, secrets);
    // Anonymous: the listing, and the one blob read in its place once refused (a container whose public access is
    // "blob"), every request without a credential.
    expect(ear.heard.length).toBeGreaterThan(0);
    expect(ear.heard.map(authHeaders).filter((headers) => Object.keys(headers).length > 0)).toEqual([]);
  });

  it('sends an Azure AD token to no other account a URI names', async () => {
    const mine = await listAt({ account: 'acct1', tokenCredential }, 'acct1', { secure: true });
    expect(mine.heard.map((r) => r.headers.authorization)).toEqual([`Bearer ${bearer}`]);
    const ear = await listAt({ account: 'acct1', tokenCredential }, 'acct2', { secure: true });
    expectNoneHeard(ear, secrets);
  });

  it("sends a connection string's key only to its account at its own blob endpoint", async () => {
    const connectionString = `DefaultEndpointsProtocol=http;AccountName=acct1;AccountKey=${accountKey};BlobEndpoint=http://127.0.0.1:1/acct1`;
    const ear = await listAt({ connectionString }, 'acct1');
    expectNoneHeard(ear, secrets);
    // Anonymous: the listing, and the one blob read in its place once refused (a container whose public access is
    // "blob"), every request without a credential.
    expect(ear.heard.length).toBeGreaterThan(0);
    expect(ear.heard.map(authHeaders).filter((headers) => Object.keys(headers).length > 0)).toEqual([]);
  });

  it('follows no redirect of the service to another endpoint with any credential', async () => {
    const elsewhere = recording(noContainer);
    const other = await serve(elsewhere.handler);
    const redirect: HttpHandler = (req, res) =>
      void res.writeHead(307, { location: `${other.url}${req.url ?? '/'}` }).end();
    const origin = await listAt({ account: 'acct1', accountKey, sasToken }, 'acct1', { handler: redirect });
    expect(origin.heard.length).toBeGreaterThan(0);
    expect(elsewhere.heard).toEqual([]);
  });
});
