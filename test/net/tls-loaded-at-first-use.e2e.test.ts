/**
 * The net room in a real Node process (jest's registry has no require cache to defer a file through): a Network's
 * plain http requests and the metrics' prom-client load neither node:tls, node:https nor node:http2 (undici's
 * HTTP/2 code and the node agents are loaded at first use); the first https connection that negotiates h2 loads
 * them, and is served.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const netRoom = join(__dirname, '..', '..', 'dist', 'net');
const metrics = join(__dirname, '..', '..', 'dist', 'surface', 'metrics');
const tlsFixtures = join(__dirname, '..', 'fixtures', 'tls');

const script = `
const { readFileSync } = require('node:fs');
const http = require('node:http');
const { once } = require('node:events');
const { createNetwork, request } = require(${JSON.stringify(netRoom)});
const fixture = (name) => readFileSync(require('node:path').join(${JSON.stringify(tlsFixtures)}, name), 'utf8');
const loaded = () => process.moduleLoadList.filter((m) => /^NativeModule (http2|https|tls)$/.test(m)).sort();
const nodeGet = (url, agent) =>
  new Promise((resolve, reject) =>
    http.get(url, { agent }, (answer) => answer.setEncoding('utf8').on('data', resolve)).on('error', reject),
  );
(async () => {
  const plain = http.createServer((q, r) => r.end('plain ' + q.httpVersion)).listen(0, '127.0.0.1');
  await once(plain, 'listening');
  const network = createNetwork();
  const url = new URL('http://127.0.0.1:' + plain.address().port + '/');
  const first = await request(url, { dispatcher: network.dispatcherFor(url) });
  const plainAnswers = [await first.body.text(), await nodeGet(url, network.agentFor(url))];
  const { registry } = require(${JSON.stringify(metrics)}).createMetrics({
    statuses: () => [],
    inFlight: () => ({ downloads: 0, loads: 0 }),
    ready: () => true,
  });
  const scraped = (await registry.metrics()).includes('modelsync_');
  const afterPlain = loaded();
  const h2 = require('node:http2').createSecureServer(
    { key: fixture('server-key.pem'), cert: fixture('server.pem'), allowHTTP1: false },
    (q, r) => r.end('h2 ' + q.httpVersion),
  ).listen(0, '127.0.0.1');
  await once(h2, 'listening');
  const trusting = createNetwork({ tls: { extraCa: [fixture('ca.pem')] } });
  const secure = new URL('https://localhost:' + h2.address().port + '/');
  const second = await request(secure, { dispatcher: trusting.dispatcherFor(secure) });
  const h2Answer = await second.body.text();
  await Promise.all([network.close(), trusting.close()]);
  plain.close();
  h2.close();
  process.stdout.write(JSON.stringify({ plainAnswers, scraped, afterPlain, h2Answer }));
})().catch((error) => { process.stderr.write(String(error && error.stack)); process.exit(1); });
`;

it('loads node:tls, node:https and node:http2 at the first h2 connection, not for plain http or metrics, and serves h2 then', () => {
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  expect(result.stderr).toBe('');
  expect(JSON.parse(result.stdout)).toEqual({
    plainAnswers: ['plain 1.1', 'plain 1.1'],
    scraped: true,
    afterPlain: [],
    h2Answer: 'h2 2.0',
  });
});
