/** Tests of the Network: proxy rules, CA bundles, and real traffic through a proxy on 127.0.0.1, undici and node agents alike. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import path from 'node:path';
import { either as E } from 'fp-ts';
import { redact } from '../../src/core/redact';
import { createNetwork, networkFrom, readCaBundle, type Network } from '../../src/net/network';
import { proxyRules, proxySettingsFrom } from '../../src/net/proxy-rules';
import { httpStorage } from '../../src/storage/http/http-storage';
import { startHttpServer, type HttpHandler, type RunningHttpServer } from '../../src/testing/http-server';
import { effectError } from '../helpers/effect-error';
import { startProxy, type TestProxy } from '../helpers/proxy';
import { useTempDir } from '../helpers/temp-dir';

const fixture = (name: string): Promise<string> =>
  readFile(path.join(__dirname, '..', 'fixtures', 'tls', name), 'utf8');
const never = new AbortController().signal;

describe('proxyRules', () => {
  const proxyFor = (env: Record<string, string>, url: string): string | undefined =>
    proxyRules(proxySettingsFrom(env)).proxyFor(new URL(url))?.href;
  const both = { HTTP_PROXY: 'http://p:3128', HTTPS_PROXY: 'http://s:3129' };

  it.each([
    [{}, 'https://bucket.example.com/m', undefined],
    [both, 'http://example.com/m', 'http://p:3128/'],
    [both, 'https://example.com/m', 'http://s:3129/'],
    [{ HTTP_PROXY: 'http://p:3128' }, 'https://example.com/m', undefined],
    [{ HTTPS_PROXY: 'http://s:3129' }, 'http://example.com/m', undefined],
    [{ HTTPS_PROXY: 's:3129' }, 'https://example.com/m', 'http://s:3129/'],
    [{ https_proxy: 'http://lower:1', HTTPS_PROXY: 'http://upper:2' }, 'https://x.org', 'http://lower:1/'],
  ])('with %j, a request to %s goes through %s', (env, url, proxy) => {
    expect(proxyFor(env, url)).toBe(proxy);
  });

  it.each([
    ['example.com', 'https://example.com/m', true],
    ['example.com', 'https://bucket.example.com/m', true],
    ['.example.com', 'https://bucket.example.com/m', true],
    ['*.example.com', 'https://example.com/m', true],
    ['example.com', 'https://badexample.com/m', false],
    ['example.com:8443', 'https://example.com:8443/m', true],
    ['example.com:8443', 'https://example.com/m', false],
    ['10.0.0.0/8', 'https://10.1.2.3/m', true],
    ['10.0.0.0/8', 'https://11.1.2.3/m', false],
    ['fd00::/8', 'https://[fd12::1]/m', true],
    ['::1', 'https://[::1]:9000/m', true],
    ['127.0.0.1', 'https://127.0.0.1:9000/m', true],
    ['localhost, .svc ,.cluster.local', 'https://minio.ns.svc/m', true],
    ['*', 'https://anything.org/m', true],
    ['0:0:0:0:0:0:0:1', 'https://[::1]:9000/m', true],
    ['FD00:0:0:0::5', 'https://[fd00::5]/m', true],
    ['[fd00:0::5]:9000', 'https://[fd00::5]:9000/m', true],
    ['[fd00:0::5]:9000', 'https://[fd00::5]/m', false],
    ['example.com.', 'https://example.com/m', true],
    ['example.com', 'https://bucket.example.com./m', true],
    ['', 'https://anything.org/m', false],
  ])('NO_PROXY=%j: %s goes direct: %s', (noProxy, url, direct) => {
    const proxy = proxyFor({ HTTPS_PROXY: 'http://s:3129', NO_PROXY: noProxy }, url);
    expect(proxy === undefined).toBe(direct);
  });

  it.each([
    ['10.0.0.1/33', 'https://10.0.0.1/m'],
    ['fd00::/129', 'https://[fd00::1]/m'],
  ])(
    'NO_PROXY=%j, a prefix no address has: no range, no refusal, %s proxied (Go, curl, requests)',
    (noProxy, url) => {
      // Before, Node's BlockList threw at start-up: the agent refused to start on a NO_PROXY every other tool takes.
      expect(() => proxyRules({ httpsProxy: 'http://s:3129', noProxy })).not.toThrow();
      expect(proxyFor({ HTTPS_PROXY: 'http://s:3129', NO_PROXY: `${noProxy},other.org` }, url)).toBe(
        'http://s:3129/',
      );
      expect(
        proxyFor({ HTTPS_PROXY: 'http://s:3129', NO_PROXY: `${noProxy},other.org` }, 'https://other.org/m'),
      ).toBe(undefined);
    },
  );

  it('refuses a proxy URL it cannot use, naming the variable and never its value', () => {
    expect(() => proxyRules({ httpsProxy: 'http://user:pw@[bad' })).toThrow(
      'HTTPS_PROXY is not a valid proxy URL',
    );
    expect(() => proxyRules({ httpProxy: 'socks5://127.0.0.1:1080' })).toThrow(
      'HTTP_PROXY must be an http:// or https:// proxy URL, not socks5:',
    );
  });

  it('refuses a proxy URL whose user or password has a % that escapes nothing, naming the variable only', () => {
    // The proxy agents decode both to send them: a stray % threw 'URI malformed', naming nothing, at start (the
    // password) or at the first download through the proxy (the user).
    for (const httpsProxy of ['http://user:pa%zz@proxy:3128', 'http://us%er:pw@proxy:3128']) {
      let message = '';
      try {
        proxyRules({ httpsProxy });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toBe('HTTPS_PROXY: its user and password must be percent-encoded (a % as %25)');
    }
    expect(() => proxyRules({ httpsProxy: 'http://us%25er:p%40ss@proxy:3128' })).not.toThrow();
  });

  it('hides a proxy password in every log line from then on', () => {
    proxyRules({ httpsProxy: 'http://me:pr0xy-s3cret@proxy:3128' });
    expect(redact('connecting with pr0xy-s3cret')).not.toContain('pr0xy-s3cret');
  });
});

describe('readCaBundle and networkFrom', () => {
  const tmp = useTempDir('net-ca');

  it('reads every certificate of a bundle', async () => {
    const file = path.join(tmp.path, 'bundle.pem');
    await writeFile(file, `${await fixture('ca.pem')}\n${await fixture('server.pem')}`);
    expect(E.map((pems: ReadonlyArray<string>) => pems.length)(readCaBundle(file))).toEqual(E.right(2));
  });

  it.each([
    ['a missing file', undefined, 'cannot read the CA bundle {file}: ENOENT'],
    ['a file without certificates', 'hello', 'the CA bundle {file} holds no PEM certificate'],
    [
      'a broken certificate',
      '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----',
      'certificate 1 of the CA bundle {file} is not a valid X.509 certificate',
    ],
  ])('says why it cannot use %s', async (_label, text, message) => {
    const file = path.join(tmp.path, 'bad.pem');
    if (text !== undefined) await writeFile(file, text);
    expect(networkFrom({ caBundle: file }, {})).toEqual(E.left(message.replace('{file}', file)));
  });

  it('says which proxy variable is wrong', () => {
    expect(networkFrom({}, { HTTPS_PROXY: 'ftp://x' })).toEqual(
      E.left('HTTPS_PROXY must be an http:// or https:// proxy URL, not ftp:'),
    );
  });
});

describe('Network traffic', () => {
  const tmp = useTempDir('net');
  const open: Array<{ close(): Promise<void> }> = [];
  let ca: string;
  let tls: { key: string; cert: string };

  beforeAll(async () => {
    ca = await fixture('ca.pem');
    tls = { key: await fixture('server-key.pem'), cert: await fixture('server.pem') };
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((it) => it.close()));
  });

  const track = <T extends { close(): Promise<void> }>(it: T): T => {
    open.push(it);
    return it;
  };
  const server = async (secure: boolean, handler?: HttpHandler): Promise<RunningHttpServer> =>
    track(
      await startHttpServer(
        handler ?? ((_req, res) => void res.writeHead(200, { 'content-length': 5 }).end('model')),
        secure ? { tls } : {},
      ),
    );
  const proxy = async (): Promise<TestProxy> => track(await startProxy());
  const network = (env: Record<string, string>, extraCa: ReadonlyArray<string> = [ca]): Network =>
    track(createNetwork({ proxy: proxySettingsFrom(env), tls: { extraCa } }));
  const target = async (): Promise<string> => {
    const dir = path.join(tmp.path, `t${Math.random().toString(36).slice(2)}`);
    await mkdir(dir);
    return dir;
  };
  const saved = async (storage: ReturnType<typeof httpStorage>, url: string): Promise<string> => {
    const dir = await target();
    await storage.download(url, dir, never);
    return readFile(path.join(dir, 'm.bin'), 'utf8');
  };

  it('sends http storage through HTTP_PROXY as absolute-URI requests', async () => {
    const [storage, p] = [await server(false), await proxy()];
    const net = network({ HTTP_PROXY: p.url });
    expect(await saved(httpStorage({ network: net }), `${storage.url}/m.bin`)).toBe('model');
    expect(p.requests).toEqual([{ method: 'GET', target: `${storage.url}/m.bin`, authorization: undefined }]);
  });

  it('tunnels https storage through HTTPS_PROXY with CONNECT, trusting the CA bundle', async () => {
    const [storage, p] = [await server(true), await proxy()];
    const net = network({ HTTPS_PROXY: p.url });
    expect(await saved(httpStorage({ network: net }), `${storage.url}/m.bin`)).toBe('model');
    expect(p.requests.map((r) => `${r.method} ${r.target}`)).toEqual([`CONNECT 127.0.0.1:${storage.port}`]);
  });

  it('sends nothing to the proxy for a host in NO_PROXY', async () => {
    const [storage, p] = [await server(true), await proxy()];
    const net = network({ HTTPS_PROXY: p.url, NO_PROXY: 'localhost,127.0.0.1' });
    expect(await saved(httpStorage({ network: net }), `${storage.url}/m.bin`)).toBe('model');
    expect(p.requests).toEqual([]);
  });

  it('sends the proxy credentials of the proxy URL', async () => {
    const storage = await server(false);
    const p = track(await startProxy({ requireAuth: `Basic ${Buffer.from('me:pw').toString('base64')}` }));
    const net = network({ HTTP_PROXY: p.url.replace('http://', 'http://me:pw@') });
    expect(await saved(httpStorage({ network: net }), `${storage.url}/m.bin`)).toBe('model');
  });

  it('fails an https download whose certificate no trusted CA signed, and passes it with verify off', async () => {
    const storage = await server(true);
    const untrusting = network({}, []);
    const error = await effectError(
      httpStorage({ network: untrusting }).download(`${storage.url}/m.bin`, await target(), never),
    );
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toMatch(/certificate/);
    const lax = track(createNetwork({ tls: { verify: false } }));
    expect(await saved(httpStorage({ network: lax }), `${storage.url}/m.bin`)).toBe('model');
  });

  it("withTls adds its CAs to the Network's own (S3's AWS_CA_BUNDLE beside --ca-bundle)", async () => {
    const storage = await server(true);
    const s3Network = track(network({}).withTls({ extraCa: [], verify: true }));
    expect(await saved(httpStorage({ network: s3Network }), `${storage.url}/m.bin`)).toBe('model');
    const untrusting = track(network({}, []).withTls({ extraCa: [], verify: true }));
    const error = await effectError(
      httpStorage({ network: untrusting }).download(`${storage.url}/m.bin`, await target(), never),
    );
    expect(error.message).toMatch(/certificate/);
  });

  const nodeGet = (url: string, agent: http.Agent): Promise<string> =>
    new Promise((resolve, reject) => {
      const get = url.startsWith('https:') ? https.get : http.get;
      get(url, { agent }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(text)).on('error', reject);
      }).on('error', reject);
    });

  it('gives SDKs node agents with the same proxy rules and CAs: agentFor and the routing agent', async () => {
    const [plain, secure, p] = [await server(false), await server(true), await proxy()];
    const net = network({ HTTPS_PROXY: p.url, HTTP_PROXY: p.url });
    expect(await nodeGet(`${secure.url}/a`, net.agentFor(new URL(secure.url)))).toBe('model');
    expect(await nodeGet(`${secure.url}/b`, net.agent)).toBe('model');
    expect(await nodeGet(`${plain.url}/c`, net.agent)).toBe('model');
    expect(p.requests.map((r) => `${r.method} ${r.target}`)).toEqual([
      `CONNECT 127.0.0.1:${secure.port}`,
      `GET ${plain.url}/c`,
    ]);
    const direct = network({ HTTPS_PROXY: p.url, NO_PROXY: '127.0.0.1' });
    expect(await nodeGet(`${secure.url}/d`, direct.agent)).toBe('model');
    expect(p.requests).toHaveLength(2);
  });

  it('keeps connections alive: requests in a row share one connection, undici and node agents alike', async () => {
    const ports = new Set<number | undefined>();
    const storage = await server(true, (req, res) => {
      ports.add(req.socket.remotePort);
      res.writeHead(200, { 'content-length': 5 }).end('model');
    });
    const net = network({});
    for (let i = 0; i < 3; i++) await saved(httpStorage({ network: net }), `${storage.url}/m.bin`);
    expect(ports.size).toBe(1);
    ports.clear();
    for (let i = 0; i < 3; i++) await nodeGet(`${storage.url}/x`, net.agent);
    expect(ports.size).toBe(1);
  });
});
