/**
 * End to end on the real process (`dist/cli.js`): one model from each storage scheme this build serves (and each
 * provider claiming URIs of one: Azure Blob), loaded by a V2 stand-in; https through a CA bundle; every scheme
 * through a proxy; progress lines and a SIGTERM mid-download leaving no staging dir, for every networked scheme.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { createNetwork } from '../../src/net/network';
import { storageProviders } from '../../src/wiring/storage';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer } from '../../src/testing/http-server';
import { rangedBody } from '../../src/testing/ranged-body';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, startCli, type CliProcess } from '../helpers/cli-process';
import { listTree } from '../helpers/file-tree';
import { atLeast, type LogLine } from '../helpers/log-sink';
import { startProxy, type TestProxy } from '../helpers/proxy';
import { useSchemeCases, type CaseSetup, type SchemeModel } from '../helpers/scheme-cases';
import { useTempDir } from '../helpers/temp-dir';
import { startTcpRelay } from '../helpers/tcp-relay';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('storage-e2e');

/**
 * One case per scheme the router serves and per provider claiming URIs of one (Azure Blob's are https URLs). A
 * provider without a case here fails the first test below: whoever adds one adds its case, with its test server.
 */
const cases = useSchemeCases();

const weights = 'weights of the model';

/** The schemes the production router serves, and the names of the providers that claim URIs of one. */
const storageNames = (): ReadonlyArray<string> => {
  const built = storageProviders(defaultAppConfig, pino({ level: 'silent' }), {}, createNetwork(), new Map());
  if (built._tag === 'Left') throw new Error(built.left);
  return [
    ...built.right.providers.flatMap((provider) => provider.schemes),
    ...built.right.claiming.map((provider) => provider.name),
  ];
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

  it('has a case for every scheme the storage router serves and every provider claiming URIs of one', () => {
    expect(Object.keys(cases).sort()).toEqual([...storageNames()].sort());
  });

  /** What a case is asked for: `weights` at the server's own port, unless `setup` says otherwise. */
  const caseSetup = (setup: Partial<CaseSetup> = {}): CaseSetup => ({
    root: tmp.path,
    content: weights,
    reach: (port) => Promise.resolve(port),
    closers,
    ...setup,
  });

  /** One model per case (those `only` takes, default all) named `<prefix>-<case>`, put in place as `setup` says. */
  const startCases = async (
    prefix: string,
    setup: Partial<CaseSetup> = {},
    only: (name: string) => boolean = () => true,
  ): Promise<Record<string, SchemeModel>> => {
    const models: Record<string, SchemeModel> = {};
    for (const [name, start] of Object.entries(cases)) {
      if (only(name)) models[`${prefix}-${name}`] = await start(caseSetup(setup));
    }
    return models;
  };

  /** Starts an agent (env `env` and flags `flags` added) on `models` in a model dir of its own. */
  const startAgentOn = async (
    models: Readonly<Record<string, SchemeModel>>,
    run: string,
    env: Readonly<Record<string, string>> = {},
    flags: Readonly<Record<string, string | number>> = {},
  ): Promise<{ agent: CliProcess; modelDir: string; server: V2ModelServerStandIn }> => {
    const { configDir, modelDir } = dirs(run);
    const server = await startV2ModelServer({ modelDir });
    closers.push(() => server.close());
    writeModels(configDir, Object.fromEntries(Object.entries(models).map(([name, m]) => [name, m.uri])));
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': server.url,
        'retry-base-ms': 10,
        'retry-max-ms': 50,
        ...merged(Object.values(models).map((m) => m.flags)),
        ...flags,
      }),
      { env: { ...merged(Object.values(models).map((m) => m.env)), ...env } },
    );
    return { agent, modelDir, server };
  };

  it('loads one model from each scheme, each `model loaded` line with its bytes and durations', async () => {
    const models = await startCases('from');
    const { agent, modelDir, server } = await startAgentOn(models, 'a');
    for (const name of Object.keys(models)) {
      const line = await agent.waitForLog(loadedLine(name), 30_000);
      expect(typeof line['loadMs']).toBe('number');
      // Local copies (file, pvc) report no bytes.
      if (name !== 'from-file' && name !== 'from-pvc') {
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
    expect(agent.logs.filter(atLeast('error'))).toEqual([]);
    // Every stderr line is JSON: on Node < 22 the AWS SDK's NodeVersionSupportWarning, when the S3 client is made,
    // comes as a warn line of its own instead of Node's plain-text printout.
    expect(agent.otherLines).toEqual([]);
    const warnings = agent.logs.filter((log) => log['component'] === 'process');
    if (Number(process.versions.node.split('.')[0]) < 22) {
      expect(warnings).toEqual([
        expect.objectContaining({
          level: 'warn',
          msg: 'process warning',
          warning: 'Warning',
          message: expect.stringContaining('NodeVersionSupportWarning') as unknown,
        }),
      ]);
    }
    expect(warnings.filter((log) => 'stack' in log)).toEqual([]);
  });

  it('sends every scheme through HTTPS_PROXY/HTTP_PROXY, never the model server, and nothing for NO_PROXY hosts', async () => {
    const proxy: TestProxy = await startProxy();
    closers.push(() => proxy.close());
    const proxyEnv = { HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url };
    const models = await startCases('via');
    const first = await startAgentOn(models, 'proxied', proxyEnv);
    for (const name of Object.keys(models)) await first.agent.waitForLog(loadedLine(name), 30_000);
    for (const { endpoint } of Object.values(models)) {
      if (endpoint !== undefined) expect(proxy.requests.some((r) => r.target.includes(endpoint))).toBe(true);
    }
    const serverPort = `:${new URL(first.server.url).port}`;
    expect(proxy.requests.filter((r) => r.target.includes(serverPort))).toEqual([]);
    expect(await first.agent.signalAndWait('SIGTERM', 10_000)).toMatchObject({ code: 0 });

    const seen = proxy.requests.length;
    const second = await startAgentOn(models, 'direct', { ...proxyEnv, NO_PROXY: 'localhost,127.0.0.1' });
    for (const name of Object.keys(models)) await second.agent.waitForLog(loadedLine(name), 30_000);
    expect(proxy.requests).toHaveLength(seen);
  });

  it('logs download progress for every networked scheme; a SIGTERM mid-download leaves no staging dir and exits 0', async () => {
    const size = 8 * 2 ** 20;
    // Each store behind a relay that sends 16 KiB every 50 ms (8 MiB take 25 s): the downloads run when the signal
    // comes. Not `file` nor `pvc`: a local copy has no connection to slow down (its abort: test/storage/local/local-storage.test.ts).
    const reach = async (port: number): Promise<number> => {
      const relay = await startTcpRelay(port, { throttle: { bytesPerTick: 16 * 1024, tickMs: 50 } });
      closers.push(() => relay.close());
      return relay.port;
    };
    const models = await startCases(
      'slow',
      { content: Buffer.alloc(size, 1), reach },
      (name) => name !== 'file' && name !== 'pvc',
    );
    const names = Object.keys(models);
    const { agent, modelDir, server } = await startAgentOn(
      models,
      'slow',
      {},
      { 'progress-interval-ms': 200, 'download-concurrency': names.length },
    );
    for (const model of names) {
      const progress = await agent.waitForLog(
        (log) => log['msg'] === 'download progress' && log['model'] === model && Number(log['bytes']) > 0,
        30_000,
      );
      expect(progress).toMatchObject({ totalBytes: size });
      expect(typeof progress['etaSeconds']).toBe('number');
    }
    const staged = () => readdirSync(modelDir).filter((entry) => entry.startsWith('.tmp-'));
    expect(staged()).toHaveLength(names.length);
    expect(await agent.signalAndWait('SIGTERM', 10_000)).toMatchObject({ code: 0, signal: null });
    expect(staged()).toEqual([]);
    expect(server.loaded.size).toBe(0);
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
    const good = await cases['http']!(caseSetup());
    writeModels(configDir, {
      good: good.uri,
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
