/**
 * Credentials sent astray, `<host>-headers`: the headers go to the host at the scheme and port the storage URI
 * names, and a redirect anywhere else (another port, another name for the address, https → http, a chain) gets none.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isRight } from 'fp-ts/Either';
import { parseHostHeaders } from '../../../src/core/storage-uri';
import { createNetwork } from '../../../src/net';
import { httpStorage } from '../../../src/storage/http/http-storage';
import type { HttpHandler } from '../../../src/testing/http-server';
import { effectError } from '../../helpers/effect-error';
import { expectNoneHeard, recording } from '../../helpers/elsewhere';
import { useHttpServers } from '../../helpers/http-servers';
import { startProxy } from '../../helpers/proxy';
import { useTempDir } from '../../helpers/temp-dir';
import { serverTls, tlsFixture } from '../../helpers/tls';

const tls = tlsFixture;
const tlsOptions = serverTls();
const network = createNetwork({ tls: { extraCa: [tls('ca.pem')] } });
afterAll(() => network.close());

const token = 'Bearer registry-token-5d1c9a7e';
const apiKey = 'api-key-8f2b6c0d4e';
const headers = { Authorization: token, 'X-Api-Key': apiKey, Cookie: `session=${apiKey}` };
const secrets = [token, apiKey];
const never = new AbortController().signal;

const ok: HttpHandler = (_req, res) => void res.writeHead(200, { 'content-length': 2 }).end('ok');
const redirectTo =
  (location: string, status = 302): HttpHandler =>
  (_req, res) =>
    void res.writeHead(status, { location }).end();

describe('httpStorage: <host>-headers bound to the endpoint of the storage URI', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('credentials-http');
  const storage = (byHost: Readonly<Record<string, Readonly<Record<string, string>>>>) =>
    httpStorage({ headersByHost: new Map(Object.entries(byHost)), network });

  it('sends the headers to the host of the URI, at the port and scheme it names', async () => {
    const origin = recording(ok);
    const server = await serve(origin.handler);
    await storage({ '127.0.0.1': headers }).download(`${server.url}/m.bin`, tmp.path, never);
    expect(origin.heard.map((r) => r.headers.authorization)).toEqual([token]);
  });

  it.each([
    ['another port of the same host', 302, 'port'],
    ['another port of the same host, by a 307', 307, 'port'],
    ['another name of the same address (localhost for 127.0.0.1)', 302, 'name'],
  ] as const)('sends none of them through a redirect to %s', async (_label, status, where) => {
    const elsewhere = recording(ok);
    const other = await serve(elsewhere.handler);
    const origin = await serve((req, res) =>
      req.url === '/m.bin' ? redirectTo(`${target}/blob`, status)(req, res) : elsewhere.handler(req, res),
    );
    // By name, the redirect reaches the origin server itself: the same socket, another host.
    const target = where === 'name' ? origin.url.replace('127.0.0.1', 'localhost') : other.url;
    await storage({ '127.0.0.1': headers }).download(`${origin.url}/m.bin`, tmp.path, never);
    expectNoneHeard(elsewhere, secrets);
  });

  it('sends none of them through a redirect from https to http on the same host', async () => {
    const plain = recording(ok);
    const insecure = await serve(plain.handler);
    const secure = await serve(redirectTo(`${insecure.url}/blob`), { tls: tlsOptions });
    await storage({ '127.0.0.1': headers }).download(`${secure.url}/m.bin`, tmp.path, never);
    expectNoneHeard(plain, secrets);
  });

  it('sends none along a chain that leaves the endpoint after a hop on it, and none from the next host', async () => {
    const elsewhere = recording(ok);
    const other = await serve(elsewhere.handler);
    const origin = recording((req, res) =>
      redirectTo(req.url === '/m.bin' ? '/hop' : `${other.url.replace('127.0.0.1', 'localhost')}/blob`)(
        req,
        res,
      ),
    );
    const server = await serve(origin.handler);
    // localhost has headers of its own: the redirect, not the config, chose where they would go.
    const localhostToken = 'Bearer localhost-token-3e9f1a';
    await storage({ '127.0.0.1': headers, localhost: { Authorization: localhostToken } }).download(
      `${server.url}/m.bin`,
      tmp.path,
      never,
    );
    expect(origin.heard.map((r) => r.headers.authorization)).toEqual([token, token]);
    expectNoneHeard(elsewhere, [...secrets, localhostToken]);
  });

  it('refuses a redirect to a URL with user info, sending nothing there', async () => {
    const elsewhere = recording(ok);
    const other = await serve(elsewhere.handler);
    const origin = await serve(redirectTo(other.url.replace('//', '//user:pw@')));
    const error = await effectError(
      storage({ '127.0.0.1': headers }).download(`${origin.url}/m`, tmp.path, never),
    );
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(elsewhere.heard).toEqual([]);
  });

  it('keys a host without case or a trailing dot, and never takes an address for a name', async () => {
    const parsed = parseHostHeaders({ 'LOCALHOST.-headers': JSON.stringify(headers) });
    expect(isRight(parsed)).toBe(true);
    const byHost = isRight(parsed) ? parsed.right : new Map();
    const origin = recording(ok);
    const server = await serve(origin.handler);
    const byName = server.url.replace('127.0.0.1', 'LocalHost');
    const [first, second] = [join(tmp.path, 'by-name'), join(tmp.path, 'by-address')];
    await Promise.all([mkdir(first), mkdir(second)]);
    await httpStorage({ headersByHost: byHost }).download(`${byName}/m.bin`, first, never);
    await httpStorage({ headersByHost: byHost }).download(`${server.url}/m.bin`, second, never);
    expect(origin.heard.map((r) => r.headers.authorization)).toEqual([token, undefined]);
  });

  it.each(['::1', '[::1]', '0:0:0:0:0:0:0:1'])(
    'keys an IPv6 host as %s-headers: KServe names it as its URL hostname, without brackets',
    async (host) => {
      // KServe's initializer and agent read `<url.hostname>-headers`: `::1-headers` for http://[::1]:port/. Before,
      // only `[::1]-headers` was read: the KServe spelling sent nothing and the store answered 401.
      const parsed = parseHostHeaders({ [`${host}-headers`]: JSON.stringify(headers) });
      const byHost = isRight(parsed) ? parsed.right : new Map();
      const origin = recording(ok);
      const server = await serve(origin.handler, { host: '::1' });
      await httpStorage({ headersByHost: byHost }).download(`${server.url}/m.bin`, tmp.path, never);
      expect(origin.heard.map((r) => r.headers.authorization)).toEqual([token]);
    },
  );

  it('sends the headers inside the tunnel only: an https proxy hears none of them', async () => {
    const proxy = await startProxy();
    try {
      const proxied = createNetwork({ proxy: { httpsProxy: proxy.url }, tls: { extraCa: [tls('ca.pem')] } });
      const origin = recording(ok);
      const server = await serve(origin.handler, { tls: tlsOptions });
      await httpStorage({ headersByHost: new Map([['127.0.0.1', headers]]), network: proxied }).download(
        `${server.url}/m.bin`,
        tmp.path,
        never,
      );
      await proxied.close();
      expect(origin.heard.map((r) => r.headers.authorization)).toEqual([token]);
      expect(proxy.requests.length).toBeGreaterThan(0);
      expect(JSON.stringify(proxy.requests)).not.toContain(apiKey);
      expect(JSON.stringify(proxy.requests)).not.toContain(token);
    } finally {
      await proxy.close();
    }
  });
});
