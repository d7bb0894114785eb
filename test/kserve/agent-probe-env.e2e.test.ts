/**
 * The agent's readiness check for each form SERVING_READINESS_PROBE takes (absent, httpGet, tcpSocket, an array,
 * malformed), and the features it refuses, on the real CLI with KServe's args beside a V2 stand-in.
 */
import { mkdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { startHttpServer } from '../../src/testing/http-server';
import { sleep } from '../../src/testing/wait';
import { runCli, startCli, type CliProcess } from '../helpers/cli-process';
import { eventually } from '../helpers/eventually';
import { atLevel } from '../helpers/log-sink';
import { removeTempDir, tempDir } from '../helpers/temp-dir';
import { freePort } from '../integration/surface-kit';
import { exchange } from './exchange';
import { agentArgs, goProbeJson, kubeletProbeHeaders } from './pod-shapes';

jest.setTimeout(60_000);

let root: string;
let userPort: number;
const running: CliProcess[] = [];
const servers: V2ModelServerStandIn[] = [];

beforeEach(async () => {
  root = await tempDir('kserve-probe');
  atomicWrite(join(root, 'configs'), { 'models.json': '[]' });
  await mkdir(join(root, 'models'));
  userPort = await freePort();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((cli) => cli.signalAndWait('SIGKILL').catch(() => undefined)));
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await removeTempDir(root);
});

const userContainer = async (): Promise<V2ModelServerStandIn> => {
  const server = await startV2ModelServer({ port: userPort });
  servers.push(server);
  return server;
};

const args = (): string[] =>
  agentArgs({
    configMountPath: join(root, 'configs'),
    modelDir: join(root, 'models'),
    componentPort: userPort,
  });

/** The agent with KServe's args and `env`; resolves with its port's URL once it listens. */
const startAgent = async (env: Record<string, string>): Promise<string> => {
  const port = await freePort();
  const cli = startCli(args(), {
    env: { ...env, MODELSYNC_HTTP_PORT: String(port), MODELSYNC_LOG_FORMAT: 'json' },
  });
  running.push(cli);
  await cli.waitForLog('HTTP surface listening', 15_000);
  return `http://127.0.0.1:${port}`;
};

/** The kubelet's probe of the agent: on `path`, which KServe's webhook sets to the user probe's httpGet path, else `/`. */
const probeStatus = async (url: string, path = '/'): Promise<number> =>
  (await exchange(url, 'GET', path, kubeletProbeHeaders)).status;

/** Resolves once the kubelet's probe of `url` answers `status`. */
const probeAnswers = (url: string, status: number, path = '/'): Promise<void> =>
  eventually(`the probe to answer ${status}`, async () => (await probeStatus(url, path)) === status, 15_000);

describe('the readiness check of the agent port', () => {
  it('without SERVING_READINESS_PROBE, passes while the model server takes connections', async () => {
    const url = await startAgent({});
    await probeAnswers(url, 503);
    const server = await userContainer();
    await probeAnswers(url, 200);
    await server.close();
    servers.splice(0);
    await probeAnswers(url, 503);
  });

  it('runs an httpGet probe: 200 only while its path answers 2xx or 3xx', async () => {
    const server = await userContainer();
    const url = await startAgent({
      SERVING_READINESS_PROBE: goProbeJson({
        httpGet: { path: '/v2/health/ready', port: userPort, scheme: 'HTTP' },
        timeoutSeconds: 1,
        periodSeconds: 10,
      }),
    });
    // KServe's webhook probes the agent on the user probe's own path (agent_injector.go, as captured from 0.19).
    const path = '/v2/health/ready';
    await probeAnswers(url, 200, path);
    server.injectFault('index', { status: 500 }); // an unrelated route: the probe path still passes
    expect(await probeStatus(url, path)).toBe(200);
    await server.close();
    servers.splice(0);
    await probeAnswers(url, 503, path);
  });

  it("runs KServe's check on the user probe's path when that path is one of modelsync's own (/healthz)", async () => {
    // The model server: a V2 stand-in, and a /healthz of its own that the test turns on.
    let userHealthy = false;
    const v2 = await startV2ModelServer({});
    servers.push(v2);
    const user = await startHttpServer(
      (request, response) => {
        if (request.url === '/healthz') return void response.writeHead(userHealthy ? 200 : 500).end();
        const upstream = httpRequest(`${v2.url}${request.url}`, { method: request.method }, (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        });
        request.pipe(upstream);
      },
      { port: userPort },
    );
    try {
      const url = await startAgent({
        SERVING_READINESS_PROBE: goProbeJson({
          httpGet: { path: '/healthz', port: userPort, scheme: 'HTTP' },
          timeoutSeconds: 1,
          periodSeconds: 10,
        }),
      });
      // The kubelet's readiness check (K-Network-Probe: queue) follows the model server, not modelsync's liveness.
      await probeAnswers(url, 503, '/healthz');
      userHealthy = true;
      await probeAnswers(url, 200, '/healthz');
      // A probe without the header, and anyone else, still reach modelsync's own /healthz.
      userHealthy = false;
      const liveness = await exchange(url, 'GET', '/healthz', { 'User-Agent': 'kube-probe/1.31' });
      expect(liveness.status).toBe(200);
      expect((await exchange(url, 'GET', '/healthz', {})).status).toBe(200);
    } finally {
      await user.close();
    }
  });

  it('runs a tcpSocket probe and an array of probes (ENABLE_MULTI_CONTAINER_PROBES), all of which must pass', async () => {
    await userContainer();
    const closed = await freePort();
    const url = await startAgent({
      ENABLE_MULTI_CONTAINER_PROBES: 'true',
      SERVING_READINESS_PROBE: JSON.stringify([
        { tcpSocket: { port: userPort }, periodSeconds: 1 },
        { tcpSocket: { port: closed }, periodSeconds: 1 },
      ]),
    });
    await sleep(500);
    expect(await probeStatus(url)).toBe(503);
  });

  it('refuses a SERVING_READINESS_PROBE it cannot run with exit 2 and one line naming the field', async () => {
    const result = await runCli(args(), {
      env: {
        SERVING_READINESS_PROBE: '{"exec":{"command":["cat","/tmp/ready"]}}',
        MODELSYNC_LOG_FORMAT: 'json',
        MODELSYNC_HTTP_PORT: String(await freePort()),
      },
    });
    expect(result.code).toBe(2);
    const errors = result.stderr.lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter(atLevel('error'));
    expect(errors.map((log) => log['reason'])).toEqual([
      "invalid SERVING_READINESS_PROBE: exec: exec probes are not supported (KServe's agent takes httpGet and tcpSocket only)",
    ]);
  });
});

describe("the features of KServe's agent modelsync does not have", () => {
  it('exits 2 on the batcher and the payload logger, naming each and what to change, never "unknown option"', async () => {
    const result = await runCli([
      ...['--enable-puller', '--config-dir', join(root, 'configs'), '--model-dir', join(root, 'models')],
      ...['--enable-batcher', '--max-batchsize', '32', '--max-latency', '5000'],
      ...[
        '--log-url',
        'http://broker/',
        '--source-uri',
        'pod',
        '--log-mode',
        'all',
        '--logger-tls-skip-verify',
        'false',
      ],
      ...['--component-port', String(userPort)],
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr.text).toContain(
      'the KServe batcher (--enable-batcher) is not supported by modelsync: remove spec.predictor.batcher',
    );
    expect(result.stderr.text).toContain(
      'the KServe payload logger (--log-url) is not supported by modelsync: remove spec.predictor.logger',
    );
    expect(result.stderr.text).not.toMatch(/unknown option/);
  });
});
