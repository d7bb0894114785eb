/**
 * Secrets suite, the real process: `dist/cli.js` runs with secrets planted in URIs, headers, the server URL,
 * the TorchServe token file and config fields, through every kind of failure; no output of it may hold one.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startTorchServeStandIn, type TorchServeStandIn } from '../../../src/testing/torchserve-stand-in';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { cliArgs, killAllCli, runCli, startCli, type CliProcess } from '../../helpers/cli-process';
import { closedPort, useHttpServers } from '../../helpers/http-servers';
import type { LogLine } from '../../helpers/log-sink';
import { SecretScan, secretValues, type PlantedSecret } from '../../helpers/secrets';
import { useTempDir } from '../../helpers/temp-dir';
import { secretsScenario, type Outcome } from './scenario';

afterEach(killAllCli);
const standIns: Array<V2ModelServerStandIn | TorchServeStandIn> = [];
afterEach(async () => {
  await Promise.all(standIns.splice(0).map((standIn) => standIn.close()));
});
const tmp = useTempDir('secrets-cli');
const serve = useHttpServers();

const fastFailures = {
  'max-attempts': 2,
  'retry-base-ms': 10,
  'retry-max-ms': 20,
  'request-timeout-ms': 500,
};

/** Starts the CLI on a kubelet-style config dir holding `models`; returns it and the config dir. */
const startOn = (models: string, flags: Record<string, string | number>, env = {}): [CliProcess, string] => {
  const configDir = join(tmp.path, 'configs');
  atomicWrite(configDir, { 'models.json': models });
  const cli = startCli(
    cliArgs({
      'config-dir': configDir,
      'model-dir': join(tmp.path, 'models'),
      'local-storage-roots': tmp.path,
      ...fastFailures,
      ...flags,
    }),
    { env },
  );
  return [cli, configDir];
};

/** The last status line logged for each model (the loader's lines carry `model` and a phase message). */
const lastStatusLines = (logs: ReadonlyArray<LogLine>): Map<string, LogLine> => {
  const last = new Map<string, LogLine>();
  for (const log of logs) if (typeof log['model'] === 'string') last.set(log['model'], log);
  return last;
};

const settled = (logs: ReadonlyArray<LogLine>, outcomes: Readonly<Record<string, Outcome>>): boolean => {
  const last = lastStatusLines(logs);
  return Object.keys(outcomes).every((model) =>
    ['model loaded', 'model failed'].includes(last.get(model)?.msg ?? ''),
  );
};

const scanOf = (secrets: ReadonlyArray<PlantedSecret>, cli: CliProcess): SecretScan =>
  new SecretScan(secrets).add('stderr', cli.stderr.lines).add('stdout', cli.stdout.lines);

describe('secrets in the output of the real process', () => {
  it('logs none of the secrets planted in storage URIs, headers and config while every kind of failure happens', async () => {
    const scenario = await secretsScenario(serve);
    const standIn = await startV2ModelServer();
    standIns.push(standIn);
    const [cli, configDir] = startOn(scenario.modelsJson(), { 'server-url': standIn.url }, scenario.env);
    await cli.waitForLog(() => settled(cli.logs, scenario.outcomes), 30_000);
    for (const [i, text] of scenario.badConfigs.entries()) {
      atomicWrite(configDir, { 'models.json': text });
      await cli.waitForLog(
        () => cli.logs.filter((log) => log.msg.startsWith('config rejected')).length > i,
        10_000,
      );
    }
    expect(await cli.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });

    const last = lastStatusLines(cli.logs);
    for (const [model, outcome] of Object.entries(scenario.outcomes)) {
      expect([model, last.get(model)?.msg, last.get(model)?.['errorKind']]).toEqual([
        model,
        outcome.phase === 'Loaded' ? 'model loaded' : 'model failed',
        outcome.errorKind,
      ]);
    }
    const scan = scanOf(scenario.secrets, cli);
    expect(scan.size.texts).toBeGreaterThan(30);
    scan.expectNoLeaks();
  });

  it('names a malformed <host>-headers variable without quoting any of its value, and exits 2', async () => {
    const token = secretValues().token;
    const malformed = [
      `Bearer ${token}`,
      `{"Authorization":"Bearer ${token}"`,
      `{"Bearer ${token}":"value"}`,
      `{"Bearer ${token}":1}`,
      `{"X-Key":"${token}\\r\\nX-Injected: 1"}`,
      `["${token}"]`,
    ];
    const runs = await Promise.all(
      malformed.map((text) =>
        runCli(cliArgs({ 'config-dir': tmp.path, 'model-dir': tmp.path }), {
          env: { 'models.example.com-headers': text },
        }),
      ),
    );
    const scan = new SecretScan([{ label: 'token in a malformed headers variable', value: token }]);
    for (const [i, run] of runs.entries()) {
      expect(run.code).toBe(2);
      expect(run.stderr.text).toContain('models.example.com-headers');
      scan.add(`run ${i} stderr`, run.stderr.lines).add(`run ${i} stdout`, run.stdout.lines);
    }
    scan.expectNoLeaks();
  });

  it('refuses a server URL with a password at start without showing it, and redacts a token while it waits', async () => {
    const { password, token } = secretValues();
    const standIn = await startV2ModelServer();
    standIns.push(standIn);
    // Every call would refuse a URL with user:password: refused at start, as a usage error naming the flag.
    const withPassword = await runCli(['--server-url', standIn.url.replace('//', `//admin:${password}@`)]);
    expect(withPassword.code).toBe(2);
    expect(withPassword.stderr.text).toContain('--server-url');
    expect(withPassword.stderr.text).toContain('user:password');
    const withToken = `http://127.0.0.1:${await closedPort()}/?access_token=${token}`;
    const [refused] = startOn('[]', { 'server-url': withToken });
    await refused.waitForLog('model server not answering yet; waiting for it');
    const usage = await runCli(['--server-url', `http://admin:${password}@`]);
    expect(usage.code).toBe(2);
    expect(usage.stderr.text).toContain('--server-url');

    await refused.signalAndWait('SIGTERM');
    new SecretScan([{ label: 'server URL password', value: password }])
      .add('password stderr', withPassword.stderr.lines)
      .add('password stdout', withPassword.stdout.lines)
      .add('usage error', usage.stderr.lines)
      .expectNoLeaks();
    new SecretScan([{ label: 'server URL token', value: token }])
      .add('refused stderr', refused.stderr.lines)
      .expectNoLeaks();
  });

  it('never logs the TorchServe keys, even when the server repeats them in its errors', async () => {
    const { token: managementKey, password: inferenceKey } = secretValues();
    const torchServe = await startTorchServeStandIn();
    standIns.push(torchServe);
    torchServe.token = managementKey;
    torchServe.failNext(
      'POST',
      2,
      500,
      `worker died serving Authorization: Bearer ${managementKey} (inference key ${inferenceKey})`,
    );
    const tokenFile = join(tmp.path, 'key_file.json');
    await writeFile(
      tokenFile,
      JSON.stringify({ management: { key: managementKey }, inference: { key: inferenceKey } }),
    );
    const models = JSON.stringify([
      { modelName: 'echoed', modelSpec: { storageUri: join(tmp.path, 'weights.bin') } },
    ]);
    await writeFile(join(tmp.path, 'weights.bin'), 'weights');
    const [cli] = startOn(models, {
      protocol: 'torchserve',
      'server-url': torchServe.url,
      'torchserve-token-file': tokenFile,
    });
    const failed = await cli.waitForLog('model failed', 20_000);
    expect(failed['reason']).toContain('worker died serving');
    await cli.signalAndWait('SIGTERM');
    scanOf(
      [
        { label: 'TorchServe management key', value: managementKey },
        { label: 'TorchServe inference key', value: inferenceKey },
      ],
      cli,
    ).expectNoLeaks();
  });
});
