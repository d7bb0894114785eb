/**
 * GCS's token requests (a workload identity's token exchange, a refresh) go by the Network as the
 * GCS requests do: its proxy rules (HTTP(S)_PROXY, NO_PROXY with CIDRs), its CA bundle. Before, google-auth-library's
 * own client (gaxios) sent them with rules of its own: HTTP_PROXY for https too, no CIDR in NO_PROXY, Node's CAs only.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createNetwork, type Network } from '../../../src/net';
import { proxySettingsFrom } from '../../../src/net/proxy-rules';
import { gcsStorage } from '../../../src/storage/object-store/gcs';
import type { HttpHandler } from '../../../src/testing/http-server';
import { recording } from '../../helpers/elsewhere';
import { useHttpServers } from '../../helpers/http-servers';
import { startProxy, type TestProxy } from '../../helpers/proxy';
import { useTempDir } from '../../helpers/temp-dir';
import { serverTls, tlsFixture } from '../../helpers/tls';

const never = new AbortController().signal;

const json =
  (body: unknown): HttpHandler =>
  (_req, res) => {
    const text = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': text.length }).end(text);
  };

const tokenAnswer = json({ access_token: 'ya29.token-of-the-test', token_type: 'Bearer', expires_in: 3600 });

/** A GCS JSON API with one object, `m1/a.bin` = "abc". */
const bucket: HttpHandler = (req, res) => {
  if ((req.url ?? '').includes('alt=media'))
    return void res.writeHead(200, { 'content-length': 3 }).end('abc');
  return json({ kind: 'storage#objects', items: [{ name: 'm1/a.bin', size: '3', generation: '7' }] })(
    req,
    res,
  );
};

/** A workload identity's credentials file: its subject token exchanged at `tokenUrl`. */
const externalAccount = async (file: string, tokenUrl: string): Promise<void> => {
  await writeFile(`${file}.subject-token`, 'subject-token-of-the-pod');
  const config = {
    type: 'external_account',
    audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/k8s',
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    token_url: tokenUrl,
    credential_source: { file: `${file}.subject-token` },
  };
  await writeFile(file, JSON.stringify(config));
};

const proxyNames = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];

describe('gcsStorage: token requests by the Network', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('gcs-token-network');
  let proxy: TestProxy | undefined;
  let network: Network | undefined;
  const saved = Object.fromEntries(proxyNames.map((name) => [name, process.env[name]]));
  afterEach(async () => {
    for (const name of proxyNames) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await network?.close();
    await proxy?.close();
    network = undefined;
    proxy = undefined;
  });

  /** Downloads gs://models/m1 with credentials whose token endpoint is `tokenUrl`, through `net`. */
  const download = async (net: Network, endpoint: string, tokenUrl: string) => {
    const credentialsFile = join(tmp.path, 'key.json');
    await externalAccount(credentialsFile, tokenUrl);
    const storage = gcsStorage({ endpoint, credentialsFile, network: net });
    return storage.download('gs://models/m1', join(tmp.path, 'model'), never);
  };

  it('sends the token request through the proxy the Network names for it', async () => {
    for (const name of proxyNames) delete process.env[name];
    proxy = await startProxy();
    const tokens = recording(tokenAnswer);
    const tokenServer = await serve(tokens.handler);
    const api = await serve(bucket);
    network = createNetwork({ proxy: { httpProxy: proxy.url } });
    await download(network, api.url, `${tokenServer.url}/token`);
    expect(tokens.heard.map((r) => r.method)).toEqual(['POST']);
    expect(proxy.requests.map((r) => `${r.method} ${r.target}`)).toContain(`POST ${tokenServer.url}/token`);
  });

  it('sends the token request direct when NO_PROXY names its address as a CIDR range', async () => {
    proxy = await startProxy();
    for (const name of proxyNames) delete process.env[name];
    process.env['HTTP_PROXY'] = proxy.url;
    process.env['HTTPS_PROXY'] = proxy.url;
    process.env['NO_PROXY'] = '127.0.0.0/8';
    const tokens = recording(tokenAnswer);
    const tokenServer = await serve(tokens.handler);
    const api = await serve(bucket);
    network = createNetwork({ proxy: proxySettingsFrom(process.env) });
    await download(network, api.url, `${tokenServer.url}/token`);
    expect(tokens.heard.map((r) => r.method)).toEqual(['POST']);
    expect(proxy.requests).toEqual([]);
  });

  it('tunnels the token request to an https endpoint through HTTPS_PROXY, trusting the CA bundle', async () => {
    for (const name of proxyNames) delete process.env[name];
    proxy = await startProxy();
    const tokens = recording(tokenAnswer);
    const tokenServer = await serve(tokens.handler, { tls: serverTls() });
    const api = await serve(bucket);
    network = createNetwork({ proxy: { httpsProxy: proxy.url }, tls: { extraCa: [tlsFixture('ca.pem')] } });
    await download(network, api.url, `${tokenServer.url}/token`);
    expect(tokens.heard.map((r) => r.method)).toEqual(['POST']);
    expect(proxy.requests.map((r) => `${r.method} ${r.target}`)).toEqual([
      `CONNECT ${new URL(tokenServer.url).host}`,
    ]);
  });

  it('trusts the CA bundle for a token endpoint served over https', async () => {
    for (const name of proxyNames) delete process.env[name];
    const tokens = recording(tokenAnswer);
    const tokenServer = await serve(tokens.handler, { tls: serverTls() });
    const api = await serve(bucket);
    network = createNetwork({ tls: { extraCa: [tlsFixture('ca.pem')] } });
    await download(network, api.url, `${tokenServer.url}/token`);
    expect(tokens.heard.map((r) => r.method)).toEqual(['POST']);
  });
});
