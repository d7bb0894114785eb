/**
 * Acceptance of the HTTP surface on the real process (dist/cli.js): /healthz, /readyz, /metrics, /status and
 * /status/<model> as a sync runs, with slow loads, failures, a rejected config and planted secrets.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelStatusJson, StatusDocumentJson } from '../../src/core/status-document';
import { surfacePaths } from '../../src/surface/http-surface';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli, type CliFlags, type CliProcess } from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import { SecretScan, secretValues } from '../helpers/secrets';
import { startStorageServer, type StorageServer } from '../helpers/storage-server';
import { useTempDir } from '../helpers/temp-dir';
import { freePort, get, getJson, sample, type Answer } from './surface-kit';

let standIn: V2ModelServerStandIn | undefined;
let storage: StorageServer | undefined;
afterEach(async () => {
  await killAllCli();
  await storage?.close();
  await standIn?.close();
  storage = standIn = undefined;
});
const tmp = useTempDir('surface');

interface Running {
  readonly agent: CliProcess;
  readonly port: number;
  readonly configDir: string;
}

/** Starts the CLI on the stand-in, with its surface on a free port, and waits until the surface listens. */
const startAgent = async (server: V2ModelServerStandIn, models: string, flags: CliFlags = {}) => {
  const configDir = join(tmp.path, 'configs');
  atomicWrite(configDir, { 'models.json': models });
  const port = await freePort();
  const agent = startCli(
    cliArgs({
      'config-dir': configDir,
      'model-dir': join(tmp.path, 'models'),
      'server-url': server.url,
      'local-storage-roots': join(tmp.path, 'pvc'),
      'http-port': port,
      'retry-base-ms': 20,
      'retry-max-ms': 50,
      'max-attempts': 2,
      ...flags,
    }),
  );
  await agent.waitForLog('HTTP surface listening', 10_000);
  return { agent, port, configDir } satisfies Running;
};

const modelsOf = async (port: number): Promise<Map<string, ModelStatusJson>> => {
  const { json } = await getJson<StatusDocumentJson>(port, surfacePaths.status);
  return new Map(json.models.map((model) => [model.model, model]));
};

describe('the HTTP surface of the agent process', () => {
  it('answers every endpoint as a slow start-up sync runs, fails and recovers, never showing a secret', async () => {
    const planted = secretValues();
    const modelDir = join(tmp.path, 'models');
    mkdirSync(join(tmp.path, 'pvc', 'local'), { recursive: true });
    writeFileSync(join(tmp.path, 'pvc', 'local', 'model.bin'), 'local model');
    standIn = await startV2ModelServer({ modelDir, loadDelayMs: 1500 });
    storage = await startStorageServer();
    storage.file('/models/remote.bin', 'r'.repeat(5000));
    const host = new URL(storage.url).host;
    const withSecrets = (path: string): string =>
      `http://${host}${path}?X-Amz-Signature=${planted.amzSignature}&token=${planted.token}`;
    const models = modelsJson({
      local: join(tmp.path, 'pvc', 'local'),
      remote: withSecrets('/models/remote.bin'),
      ghost: withSecrets('/models/ghost.bin'),
    });
    const { agent, port, configDir } = await startAgent(standIn, models);
    const answers: Answer[] = [];
    const fetched = async (path: string): Promise<Answer> => {
      const answer = await get(port, path);
      answers.push(answer);
      return answer;
    };

    // Before the start-up sync is done: alive, not ready; a model in its slow load shows as Loading.
    expect((await fetched(surfacePaths.healthz)).status).toBe(200);
    await agent.waitForLog((line) => line.msg === 'model loading' && line['model'] === 'local', 10_000);
    expect((await fetched(surfacePaths.readyz)).status).toBe(503);
    expect((await modelsOf(port)).get('local')?.phase).toBe('Loading');

    await agent.waitForLog('start-up sync complete; ready', 20_000);
    expect((await fetched(surfacePaths.readyz)).status).toBe(200);
    const status = JSON.parse((await fetched(surfacePaths.status)).body) as StatusDocumentJson;
    expect(status.ready).toBe(true);
    expect(status.models.map((model) => [model.model, model.phase])).toEqual([
      ['ghost', 'Failed'],
      ['local', 'Loaded'],
      ['remote', 'Loaded'],
    ]);
    const [ghost, local, remote] = status.models;
    const failedLine = await agent.waitForLog('model failed');
    expect(ghost).toMatchObject({
      attempts: 1,
      error: { kind: failedLine['errorKind'], reason: failedLine['reason'] },
      spec: { storageUri: `http://${host}/models/ghost.bin` },
    });
    expect(ghost?.error?.kind).toBe('http-status');
    expect(ghost?.error?.reason).toContain('404');
    expect(local?.durationMs).toBeGreaterThanOrEqual(1400); // its Loading took the stand-in's load delay
    expect(remote).toMatchObject({ bytesDownloaded: 5000, attempts: 0 });
    expect(Date.parse(remote!.since!)).toBeLessThanOrEqual(Date.now());
    expect(status.config).toEqual({
      source: 'config-dir',
      lastAccepted: {
        at: expect.any(String) as string,
        checksum: createHash('sha256').update(models).digest('hex'),
      },
      lastRejected: null,
    });
    expect(JSON.parse((await fetched('/status/ghost')).body)).toEqual(ghost);
    expect((await fetched('/status/nobody')).status).toBe(404);

    const metrics = (await fetched(surfacePaths.metrics)).body;
    expect(
      [
        'modelsync_ready',
        'modelsync_models{phase="Loaded"}',
        'modelsync_models{phase="Failed"}',
        'modelsync_model_ops_total{op="add"}',
        'modelsync_downloads_total{result="success"}',
        'modelsync_downloads_total{result="failure",error_kind="http-status"}',
        'modelsync_loads_total{result="success"}',
        'modelsync_download_bytes_sum{scheme="http"}',
        'modelsync_download_bytes_count{scheme="file"}', // local copies count no bytes
        'modelsync_load_duration_seconds_count',
        'modelsync_config_reads_total{outcome="accepted"}',
      ].map((series) => sample(metrics, series)),
    ).toEqual([1, 2, 1, 3, 2, 1, 2, 5000, 0, 2, 1]);
    expect(metrics).toMatch(/^process_cpu_seconds_total /m);
    expect(sample(metrics, 'modelsync_config_last_accepted_timestamp_seconds')).toBeGreaterThan(0);
    expect(metrics).toContain(
      `modelsync_config_info{checksum="${status.config.lastAccepted!.checksum!.slice(0, 12)}"} 1`,
    );

    // A rejected edit is shown with its reason; a model failing after start-up leaves the pod ready.
    atomicWrite(configDir, {
      'models.json': '[{"modelName":"x","modelSpec":{"storageUri":"/x","memory":"lots"}}]',
    });
    await agent.waitForLog('config rejected; keeping the previous models');
    const rejected = await getJson<StatusDocumentJson>(port, surfacePaths.status);
    expect(rejected.json.config.lastRejected?.reason).toContain('memory');
    atomicWrite(configDir, {
      'models.json': modelsJson({
        local: join(tmp.path, 'pvc', 'local'),
        remote: withSecrets('/models/remote.bin'),
        ghost: withSecrets('/models/ghost.bin'),
        late: withSecrets('/models/late.bin'),
      }),
    });
    await waitFor(async () => (await modelsOf(port)).get('late')?.phase === 'Failed', 10_000, 'late to fail');
    expect((await fetched(surfacePaths.readyz)).status).toBe(200);
    const moved = (await fetched(surfacePaths.metrics)).body;
    expect(
      [
        'modelsync_model_ops_total{op="add"}',
        'modelsync_downloads_total{result="failure",error_kind="http-status"}',
        'modelsync_config_reads_total{outcome="rejected"}',
        'modelsync_config_reads_total{outcome="accepted"}',
      ].map((series) => sample(moved, series)),
    ).toEqual([4, 2, 1, 2]);

    const scan = new SecretScan([
      { label: 'token', value: planted.token },
      { label: 'signature', value: planted.amzSignature },
    ]);
    scan
      .add(
        'surface bodies',
        answers.map((answer) => answer.body),
      )
      .add('stderr', agent.stderr.text);
    expect(scan.size.chars).toBeGreaterThan(10_000);
    scan.expectNoLeaks();
  }, 60_000);
});
