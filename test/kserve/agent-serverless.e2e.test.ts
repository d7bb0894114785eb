/**
 * modelsync as KServe's `agent` in Serverless mode: the env is queue-proxy's copy (pod-shapes.ts), queue-proxy
 * sends every request to the agent's port, and the user container is a real KServe model server. The model is
 * fetched over http from a file server.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { startCli, type CliProcess } from '../helpers/cli-process';
import { eventually } from '../helpers/eventually';
import { modelsJson } from '../helpers/fixtures';
import { removeTempDir, tempDir } from '../helpers/temp-dir';
import { freePort } from '../integration/surface-kit';
import { ensureRealServers } from '../real-servers/global-setup';
import { fixtureModel, infer } from '../real-servers/models';
import { startRealServer, type RealServer } from '../real-servers/servers';
import { endToEndHeaders, exchange } from './exchange';
import { agentArgs, kubeletProbeHeaders, serverlessEnv } from './pod-shapes';

jest.setTimeout(240_000);

let root: string;
let files: RunningHttpServer;
let server: RealServer;
let agent: CliProcess;
let agentUrl: string;

/** Headers queue-proxy's reverse proxy sends on (Knative adds the forwarding ones and its own K- ones). */
const fromQueueProxy = {
  host: 'iris-predictor.models.example.com',
  'x-forwarded-for': '10.244.0.1',
  'x-forwarded-proto': 'http',
  'k-proxy-request': 'activator',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  'content-type': 'application/json',
};

beforeAll(ensureRealServers, 15 * 60_000);

beforeAll(async () => {
  root = await tempDir('kserve-serverless');
  const configDir = join(root, 'configs');
  const modelDir = join(root, 'models');
  await mkdir(modelDir);
  const model = await readFile(join(fixtureModel('kserve', 'v1'), 'model.json'));
  files = await startHttpServer((request, response) => {
    if (request.url !== '/models/add/model.json') return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(model);
  });
  server = await startRealServer('kserve', { modelDir });
  void atomicWrite(configDir, {
    'models.json': modelsJson({
      add: { storageUri: `${files.url}/models/add/model.json`, framework: 'custom' },
    }),
  });
  const userPort = Number(new URL(server.url).port);
  const port = await freePort();
  agentUrl = `http://127.0.0.1:${port}`;
  agent = startCli(agentArgs({ configMountPath: configDir, modelDir, componentPort: userPort }), {
    env: { ...serverlessEnv(userPort), MODELSYNC_HTTP_PORT: String(port), MODELSYNC_LOG_FORMAT: 'json' },
  });
  await eventually(
    'the model serves through the agent port',
    async () => (await infer({ kind: 'kserve', url: agentUrl }, 'add')) === 1,
    90_000,
    () => agent.transcript(30),
  );
  // The model serves as soon as the server loaded it; modelsync is ready once it has the server's answer too.
  await eventually(
    'modelsync reports its start-up sync done',
    async () => (await exchange(agentUrl, 'GET', '/readyz')).status === 200,
    30_000,
    () => agent.transcript(30),
  );
});

afterAll(async () => {
  await agent?.signalAndWait('SIGTERM').catch(() => undefined);
  await server?.stop();
  await files?.close();
  await removeTempDir(root);
});

describe("modelsync as KServe's agent (Serverless, queue-proxy's env, a real KServe model server)", () => {
  it("runs Knative's probe of the user container for the kubelet's probe", async () => {
    const answer = await exchange(agentUrl, 'GET', '/', kubeletProbeHeaders);
    expect([answer.status, answer.body.toString()]).toEqual([200, 'queue']);
    const queueProxyStyle = await exchange(agentUrl, 'GET', '/', {
      'K-Kubelet-Probe': 'queue',
      'K-Network-Probe': 'queue',
    });
    expect(queueProxyStyle.status).toBe(200);
  });

  it('proxies what queue-proxy sends on, as the model server answers it directly', async () => {
    const body = JSON.stringify({
      id: 'r-7',
      inputs: [{ name: 'input-0', shape: [3], datatype: 'FP32', data: [1, 2, 3] }],
    });
    for (const [method, path, payload] of [
      ['POST', '/v2/models/add/infer', body],
      ['GET', '/v2/models/add', undefined],
      ['GET', '/v1/models/add', undefined],
      ['GET', '/', undefined],
      ['GET', '/v2/models/missing/ready', undefined],
    ] as const) {
      const direct = await exchange(server.url, method, path, fromQueueProxy, payload);
      const proxied = await exchange(agentUrl, method, path, fromQueueProxy, payload);
      expect([path, proxied.status, endToEndHeaders(proxied)]).toEqual([
        path,
        direct.status,
        endToEndHeaders(direct),
      ]);
      expect(proxied.body.toString()).toBe(direct.body.toString());
    }
    // K-Network-Probe: queue from anyone but the kubelet is the model server's request, as in KServe's agent.
    const notKubelet = await exchange(agentUrl, 'GET', '/', { 'K-Network-Probe': 'queue' });
    expect(notKubelet.body.toString()).toBe((await exchange(server.url, 'GET', '/')).body.toString());
  });

  it("answers Knative's network probe with its hash", async () => {
    const answer = await exchange(agentUrl, 'GET', '/', {
      'K-Network-Probe': 'probe',
      'K-Network-Hash': 'h-42',
    });
    expect([answer.status, answer.header('k-network-hash')]).toEqual([200, 'h-42']);
  });

  it('does not answer the probe 200 while the user container is down, and does again once it is back', async () => {
    await server.stop();
    const probed = await exchange(agentUrl, 'GET', '/', kubeletProbeHeaders);
    expect(probed.status).toBe(503);
    await server.restart();
    const answer = await exchange(agentUrl, 'GET', '/', kubeletProbeHeaders);
    expect([answer.status, answer.body.toString()]).toEqual([200, 'queue']);
  });
});
