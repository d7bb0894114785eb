/**
 * modelsync run as KServe injects its `agent` container (pod-shapes.ts: KServe's args and env), beside a real
 * MLServer as `kserve-container`, the models in s3rver behind KServe's S3 credential env: it loads what
 * models.json lists, answers the kubelet's probe as the user container comes and goes, and proxies inference
 * on its port byte for byte while the model list changes.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { sleep } from '../../src/testing/wait';
import { startCli, type CliProcess } from '../helpers/cli-process';
import { eventually } from '../helpers/eventually';
import { readFileBytes } from '../helpers/file-tree';
import { modelsJson } from '../helpers/fixtures';
import { startS3Server, type S3Server } from '../helpers/s3-server';
import { removeTempDir, tempDir } from '../helpers/temp-dir';
import { freePort } from '../integration/surface-kit';
import { ensureRealServers } from '../real-servers/global-setup';
import { fixtureModel, infer } from '../real-servers/models';
import { startRealServer, type RealServer } from '../real-servers/servers';
import { endToEndHeaders, exchange } from './exchange';
import { agentArgs, kubeletProbeHeaders, rawDeploymentEnv, s3CredentialEnv } from './pod-shapes';

jest.setTimeout(240_000);

let s3: S3Server;
let root: string;
let server: RealServer;
let agent: CliProcess;
let agentUrl: string;
let configDir: string;

/** Every file of a fixture dir, by its path below it. */
const prefixed = (prefix: string, files: Record<string, Buffer>): Record<string, Buffer> =>
  Object.fromEntries(Object.entries(files).map(([path, bytes]) => [`${prefix}/${path}`, bytes]));

const configure = (models: Readonly<Record<string, 'v1' | 'v2'>>): void =>
  void atomicWrite(configDir, {
    'models.json': modelsJson(
      Object.fromEntries(
        Object.entries(models).map(([name, variant]) => [
          name,
          { storageUri: `s3://models/mlserver/${variant}`, framework: 'sklearn', memory: '100Mi' },
        ]),
      ),
    ),
  });

const probe = () => exchange(agentUrl, 'GET', '/', kubeletProbeHeaders);

const until = (what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> =>
  eventually(what, check, timeoutMs, () => agent.transcript(30));

const serves = (name: string, version: number) => async () =>
  (await infer({ kind: 'mlserver', url: agentUrl }, name)) === version;

beforeAll(ensureRealServers, 15 * 60_000);

beforeAll(async () => {
  root = await tempDir('kserve-agent');
  configDir = join(root, 'configs');
  const modelDir = join(root, 'models');
  s3 = await startS3Server();
  await s3.createBucket('models');
  await s3.put('models', {
    ...prefixed('mlserver/v1', await readFileBytes(fixtureModel('mlserver', 'v1'))),
    ...prefixed('mlserver/v2', await readFileBytes(fixtureModel('mlserver', 'v2'))),
  });
  await mkdir(modelDir);
  server = await startRealServer('mlserver', { modelDir });
  configure({ stable: 'v1', iris: 'v1' });
  const componentPort = Number(new URL(server.url).port);
  const port = await freePort();
  agentUrl = `http://127.0.0.1:${port}`;
  agent = startCli(agentArgs({ configMountPath: configDir, modelDir, componentPort }), {
    env: {
      ...rawDeploymentEnv({ httpGet: { path: '/v2/health/ready', port: componentPort } }),
      ...s3CredentialEnv(s3.url, s3.keys),
      // The one setting not from KServe: tests run side by side, so each agent gets its own port for 9081.
      MODELSYNC_HTTP_PORT: String(port),
      MODELSYNC_LOG_FORMAT: 'json',
    },
  });
  await until(
    'the models load through the agent port',
    async () => (await serves('iris', 1)()) && (await serves('stable', 1)()),
  );
  // The models serve as soon as the server loaded them; modelsync is ready once it has the server's answers too.
  await until(
    'modelsync reports its start-up sync done',
    async () => (await exchange(agentUrl, 'GET', '/readyz')).status === 200,
  );
});

afterAll(async () => {
  await agent?.signalAndWait('SIGTERM').catch(() => undefined);
  await server?.stop();
  await s3?.close();
  await removeTempDir(root);
});

describe("modelsync as KServe's agent (RawDeployment, a real MLServer)", () => {
  it("answers the kubelet's probe with 200 queue, and a probe without K-Network-Probe: queue with 400", async () => {
    const ready = await probe();
    expect([ready.status, ready.body.toString()]).toEqual([200, 'queue']);
    const wrong = await exchange(agentUrl, 'GET', '/', { 'User-Agent': 'kube-probe/1.31' });
    expect([wrong.status, wrong.body.toString()]).toEqual([400, 'unexpected probe header value: \n']);
  });

  it('proxies small and multi-MiB inference byte for byte, headers kept, and passes unknown routes through', async () => {
    const rows = 100_000;
    // A request id makes MLServer's answer (its `id`, its ce-id headers) the same for the same request.
    const big = JSON.stringify({
      id: 'same-request',
      inputs: [
        {
          name: 'input-0',
          shape: [rows, 2],
          datatype: 'FP32',
          data: Array.from({ length: rows * 2 }, (_, i) => (i % 1000) / 7),
        },
      ],
    });
    expect(Buffer.byteLength(big)).toBeGreaterThan(2 * 2 ** 20);
    for (const [method, path, body] of [
      ['GET', '/v2/models/iris', undefined],
      ['POST', '/v2/models/iris/infer', big],
      ['GET', '/v2/health/ready', undefined],
      ['GET', '/no/such/route?x=1', undefined],
      ['POST', '/v2/models/absent/infer', '{"inputs":[]}'],
    ] as const) {
      const headers = { 'content-type': 'application/json', 'x-request-id': 'r-1' };
      const direct = await exchange(server.url, method, path, headers, body);
      const proxied = await exchange(agentUrl, method, path, headers, body);
      expect([path, proxied.status]).toEqual([path, direct.status]);
      expect(endToEndHeaders(proxied).filter(([name]) => name.toLowerCase() !== 'content-length')).toEqual(
        endToEndHeaders(direct).filter(([name]) => name.toLowerCase() !== 'content-length'),
      );
      expect(proxied.body.equals(direct.body)).toBe(true);
    }
  });

  it("keeps modelsync's own paths on its port", async () => {
    const status = await exchange(agentUrl, 'GET', '/status/iris');
    expect(JSON.parse(status.body.toString())).toMatchObject({ model: 'iris', phase: 'Loaded' });
    expect((await exchange(agentUrl, 'GET', '/healthz')).status).toBe(200);
    expect((await exchange(agentUrl, 'GET', '/metrics')).body.toString()).toContain('modelsync_');
  });

  it('keeps proxying while the model list changes', async () => {
    let stop = false;
    const answers: number[] = [];
    const load = (async () => {
      while (!stop)
        answers.push(
          (
            await exchange(
              agentUrl,
              'POST',
              '/v2/models/stable/infer',
              {},
              JSON.stringify({
                inputs: [{ name: 'input-0', shape: [2, 2], datatype: 'FP32', data: [1, 2, 3, 4] }],
              }),
            )
          ).status,
        );
    })();
    configure({ stable: 'v1', iris: 'v2', added: 'v2' });
    await until(
      'the changed and the added model serve v2',
      async () => (await serves('iris', 2)()) && (await serves('added', 2)()),
    );
    configure({ stable: 'v1', added: 'v2' });
    await until(
      'the removed model is gone',
      async () => (await exchange(agentUrl, 'GET', '/v2/models/iris/ready')).status !== 200,
    );
    stop = true;
    await load;
    expect(answers.length).toBeGreaterThan(10);
    expect(new Set(answers)).toEqual(new Set([200]));
  });

  it('answers the probe 503 while the user container is gone, the proxy 502 with no internals, and 200 once it is back', async () => {
    await server.stop();
    const gone = await probe();
    expect([gone.status, gone.body.toString()]).toEqual([503, '']);
    const bad = await exchange(agentUrl, 'GET', '/v2/models/stable');
    expect(bad.status).toBe(502);
    expect(bad.body.toString()).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|\d{4,5}/);
    await server.restart();
    await until('the probe passes again', async () => (await probe()).status === 200);
  });

  it('on SIGTERM answers the probe 503 shutting down, goes on proxying until the traffic stops, then exits 0', async () => {
    let stop = false;
    const answers: number[] = [];
    const traffic = (async () => {
      while (!stop) answers.push((await exchange(agentUrl, 'GET', '/v2/health/live')).status);
    })();
    await until('traffic flows', () => Promise.resolve(answers.length > 3));
    agent.child.kill('SIGTERM');
    await until(
      'the probe says shutting down',
      async () => {
        const answer = await probe();
        return answer.status === 503 && answer.body.toString() === 'shutting down\n';
      },
      10_000,
    );
    const atSignal = answers.length;
    await sleep(500);
    stop = true;
    await traffic;
    expect(answers.length).toBeGreaterThan(atSignal);
    expect(new Set(answers)).toEqual(new Set([200]));
    const exit = await agent.exited;
    expect(exit.code).toBe(0);
    expect(agent.logs.some((log) => log.msg === 'modelsync stopped')).toBe(true);
  });
});
