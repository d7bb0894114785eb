/**
 * End to end on the real process (`dist/cli.js`): one model from each storage scheme this build serves, loaded by a
 * V2 stand-in; https through a CA bundle and a proxy; a SIGTERM mid-download leaves no staging dir and exits 0.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultAppConfig } from '../../src/core/app-config';
import pino from 'pino';
import { servedSchemes } from '../../src/production-storage';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { rangedBody } from '../../src/testing/ranged-body';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli, type CliProcess } from '../helpers/cli-process';
import { listTree, writeFiles } from '../helpers/file-tree';
import type { LogLine } from '../helpers/log-sink';
import { startProxy, type TestProxy } from '../helpers/proxy';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('storage-e2e');

const tlsFixture = (name: string): string =>
  readFileSync(join(__dirname, '..', 'fixtures', 'tls', name), 'utf8');
const caBundle = join(__dirname, '..', 'fixtures', 'tls', 'ca.pem');

/** One scheme's model: its URI, and what the agent needs to reach it (env vars, flags). */
interface SchemeModel {
  readonly uri: string;
  /** `127.0.0.1:<port>` of the server the agent downloads it from (a proxy must see it); none for local files. */
  readonly endpoint?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly flags?: Readonly<Record<string, string>>;
}

/** Where each scheme's model is served for one test, with what closes the servers afterwards. */
type SchemeCase = (root: string, closers: Array<() => Promise<unknown>>) => Promise<SchemeModel>;

const weights = 'weights of the model';

const serveHttp = async (
  tls: boolean,
  closers: Array<() => Promise<unknown>>,
): Promise<RunningHttpServer> => {
  const server = await startHttpServer(
    (_req, res) => void res.writeHead(200, { 'content-length': weights.length }).end(weights),
    tls ? { tls: { key: tlsFixture('server-key.pem'), cert: tlsFixture('server.pem') } } : {},
  );
  closers.push(() => server.close());
  return server;
};

/**
 * One case per scheme. A scheme the router serves without a case here fails the test below: whoever adds a provider
 * (s3, gs, azure: `https://<account>.blob.core.windows.net` URIs) adds its case, with its test server.
 */
const cases: Readonly<Record<string, SchemeCase>> = {
  file: async (root) => {
    await writeFiles(join(root, 'pvc'), { 'local-model/model.bin': weights });
    return { uri: join(root, 'pvc', 'local-model'), flags: { 'local-storage-roots': join(root, 'pvc') } };
  },
  http: async (_root, closers) => {
    const server = await serveHttp(false, closers);
    return { uri: `${server.url}/model.bin`, endpoint: `127.0.0.1:${server.port}` };
  },
  https: async (_root, closers) => {
    const server = await serveHttp(true, closers);
    return {
      uri: `${server.url}/model.bin`,
      endpoint: `127.0.0.1:${server.port}`,
      flags: { 'ca-bundle': caBundle },
    };
  },
};

const merged = (
  records: ReadonlyArray<Readonly<Record<string, string>> | undefined>,
): Record<string, string> => Object.fromEntries(records.flatMap((record) => Object.entries(record ?? {})));

const loadedLine = (model: string) => (log: LogLine) =>
  log['msg'] === 'model loaded' && log['model'] === model;

describe('storage end to end on the real process', () => {
  let standIn: V2ModelServerStandIn | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
    await standIn?.close();
  });

  const dirs = (run = 'a') => {
    const configDir = join(tmp.path, `configs-${run}`);
    const modelDir = join(tmp.path, `models-${run}`);
    mkdirSync(modelDir, { recursive: true });
    return { configDir, modelDir };
  };
  const writeModels = (configDir: string, models: Readonly<Record<string, string>>): void => {
    atomicWrite(configDir, {
      'models.json': JSON.stringify(
        Object.entries(models).map(([modelName, storageUri]) => ({ modelName, modelSpec: { storageUri } })),
      ),
    });
  };

  it('has a case for every scheme the storage router serves', () => {
    expect(Object.keys(cases).sort()).toEqual(
      [...servedSchemes(defaultAppConfig, pino({ level: 'silent' }))].sort(),
    );
  });

  /** Starts every case's server, then an agent (env `env` added) on models `from-<scheme>` in a model dir of its own. */
  const startAllSchemes = async (
    models: Record<string, SchemeModel>,
    run: string,
    env: Readonly<Record<string, string>> = {},
  ): Promise<{ agent: CliProcess; modelDir: string; server: V2ModelServerStandIn }> => {
    const { configDir, modelDir } = dirs(run);
    const server = await startV2ModelServer({ modelDir });
    closers.push(() => server.close());
    if (Object.keys(models).length === 0) {
      for (const [scheme, start] of Object.entries(cases))
        models[`from-${scheme}`] = await start(tmp.path, closers);
    }
    writeModels(configDir, Object.fromEntries(Object.entries(models).map(([name, m]) => [name, m.uri])));
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': server.url,
        'retry-base-ms': 10,
        'retry-max-ms': 50,
        ...merged(Object.values(models).map((m) => m.flags)),
      }),
      { env: { ...merged(Object.values(models).map((m) => m.env)), ...env } },
    );
    return { agent, modelDir, server };
  };

  it('loads one model from each scheme, each `model loaded` line with its bytes and durations', async () => {
    const models: Record<string, SchemeModel> = {};
    const { agent, modelDir, server } = await startAllSchemes(models, 'a');
    for (const name of Object.keys(models)) {
      const line = await agent.waitForLog(loadedLine(name), 30_000);
      expect(typeof line['loadMs']).toBe('number');
      if (name !== 'from-file') {
        expect(line['bytes']).toBe(weights.length);
        expect(typeof line['downloadMs']).toBe('number');
      }
    }
    expect([...server.loaded].sort()).toEqual(Object.keys(models).sort());
    for (const name of Object.keys(models)) {
      expect((await listTree(join(modelDir, name))).filter((f) => !f.startsWith('SUCCESS.'))).toEqual([
        'model.bin',
      ]);
    }
    expect(agent.logs.filter((log) => log.level >= 50)).toEqual([]);
  });

  it('sends every scheme through HTTPS_PROXY/HTTP_PROXY, never the model server, and nothing for NO_PROXY hosts', async () => {
    const proxy: TestProxy = await startProxy();
    closers.push(() => proxy.close());
    const proxyEnv = { HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url };
    const models: Record<string, SchemeModel> = {};
    const first = await startAllSchemes(models, 'proxied', proxyEnv);
    for (const name of Object.keys(models)) await first.agent.waitForLog(loadedLine(name), 30_000);
    for (const { endpoint } of Object.values(models)) {
      if (endpoint !== undefined) expect(proxy.requests.some((r) => r.target.includes(endpoint))).toBe(true);
    }
    const serverPort = `:${new URL(first.server.url).port}`;
    expect(proxy.requests.filter((r) => r.target.includes(serverPort))).toEqual([]);
    expect(await first.agent.signalAndWait('SIGTERM', 10_000)).toMatchObject({ code: 0 });

    const seen = proxy.requests.length;
    const second = await startAllSchemes(models, 'direct', { ...proxyEnv, NO_PROXY: 'localhost,127.0.0.1' });
    for (const name of Object.keys(models)) await second.agent.waitForLog(loadedLine(name), 30_000);
    expect(proxy.requests).toHaveLength(seen);
  });

  it('logs download progress at its interval, and a SIGTERM mid-download leaves no staging dir and exits 0', async () => {
    const { configDir, modelDir } = dirs();
    standIn = await startV2ModelServer({ modelDir });
    // A body that trickles: 64 KiB every 50 ms, 64 MiB in all; the download is still running when the signal comes.
    const slow = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-length': 64 * 2 ** 20, 'content-type': 'application/octet-stream' });
      const block = Buffer.alloc(64 * 1024, 1);
      const timer = setInterval(() => {
        if (!res.write(block)) res.once('drain', () => undefined);
      }, 50);
      res.on('close', () => clearInterval(timer));
    });
    closers.push(() => slow.close());
    writeModels(configDir, { big: `${slow.url}/big.bin` });
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'progress-interval-ms': 200,
      }),
    );
    const progress = await agent.waitForLog('download progress', 20_000);
    expect(progress).toMatchObject({ model: 'big', totalBytes: 64 * 2 ** 20 });
    expect(progress['bytes']).toBeGreaterThan(0);
    expect(typeof progress['etaSeconds']).toBe('number');
    await waitFor(
      () => readdirSync(modelDir).some((entry) => entry.startsWith('.tmp-')),
      10_000,
      'a staging dir',
    );
    expect(await agent.signalAndWait('SIGTERM', 10_000)).toMatchObject({ code: 0, signal: null });
    expect(readdirSync(modelDir).filter((entry) => entry.startsWith('.tmp-'))).toEqual([]);
    expect(standIn.loaded.size).toBe(0);
  });

  it('resumes a download cut mid-body on the real process, without starting it again', async () => {
    const { configDir, modelDir } = dirs();
    standIn = await startV2ModelServer({ modelDir });
    const body = rangedBody({ size: 8 * 2 ** 20 });
    body.cutAt(5 * 2 ** 20);
    const server = await startHttpServer(body.handle);
    closers.push(() => server.close());
    writeModels(configDir, { cut: `${server.url}/cut.bin` });
    const agent = startCli(
      cliArgs({ 'config-dir': configDir, 'model-dir': modelDir, 'server-url': standIn.url }),
    );
    const loaded = await agent.waitForLog(loadedLine('cut'), 30_000);
    expect(loaded['bytes']).toBe(8 * 2 ** 20);
    expect(body.requests.map((r) => r.status)).toEqual([200, 206]);
    expect(agent.logs.filter((log) => log['msg'] === 'model step failed; retrying')).toEqual([]);
  });

  it('warns as soon as a config names a scheme no provider serves, and fails only that model', async () => {
    const { configDir, modelDir } = dirs();
    standIn = await startV2ModelServer({ modelDir });
    const good = await serveHttp(false, closers);
    writeModels(configDir, {
      good: `${good.url}/model.bin`,
      hdfs: 'hdfs://namenode/models/m?delegation=s3cr3t',
    });
    const agent = startCli(
      cliArgs({ 'config-dir': configDir, 'model-dir': modelDir, 'server-url': standIn.url }),
    );
    const warning = await agent.waitForLog(
      (log) => log['msg'] === 'no storage provider serves hdfs://; the model will fail',
      20_000,
    );
    expect(warning).toMatchObject({ model: 'hdfs', scheme: 'hdfs', storageUri: 'hdfs://namenode/models/m' });
    const failed = await agent.waitForLog(
      (log) => log['msg'] === 'model failed' && log['model'] === 'hdfs',
      20_000,
    );
    expect(failed).toMatchObject({ errorKind: 'unsupported-scheme' });
    await agent.waitForLog(loadedLine('good'), 20_000);
    expect(agent.transcript(1000)).not.toContain('s3cr3t');
  });
});
