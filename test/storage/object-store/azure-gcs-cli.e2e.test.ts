/**
 * Azure Blob and gs:// models on the real process (`dist/cli.js`, credentials from KServe's environment names):
 * loaded end to end from azurite and the GCS stand-in, no key or SAS in any line, and a SIGTERM mid-download
 * leaves no staging dir.
 */
import { mkdirSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadJournalFileName } from '../../../src/model-dir/load-journal';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startGcsStandIn, type GcsStandIn } from '../../../src/testing/gcs-stand-in';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { waitFor } from '../../../src/testing/wait';
import { useAzurite } from '../../helpers/azurite';
import { cliArgs, killAllCli, startCli } from '../../helpers/cli-process';
import { listTree, readFiles } from '../../helpers/file-tree';
import { SecretScan } from '../../helpers/secrets';
import { useTempDir } from '../../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('azure-gcs-cli');
const azurite = useAzurite();

let gcs: GcsStandIn;
let standIn: V2ModelServerStandIn | undefined;
beforeAll(async () => {
  gcs = await startGcsStandIn();
});
afterAll(() => gcs.close());
afterEach(() => standIn?.close());

/** The model dir, the V2 stand-in serving it, and a config dir holding `models` (name → storageUri). */
const setUp = async (models: Readonly<Record<string, string>>) => {
  const configDir = join(tmp.path, 'configs');
  const modelDir = join(tmp.path, 'models');
  mkdirSync(modelDir);
  standIn = await startV2ModelServer({ modelDir });
  atomicWrite(configDir, {
    'models.json': JSON.stringify(
      Object.entries(models).map(([modelName, storageUri]) => ({ modelName, modelSpec: { storageUri } })),
    ),
  });
  const flags = {
    'config-dir': configDir,
    'model-dir': modelDir,
    'server-url': standIn.url,
    'azure-blob-endpoint': azurite.current.url,
    'gcs-endpoint': gcs.url,
  };
  return { modelDir, standIn, flags };
};

describe('Azure Blob and GCS models on the real process', () => {
  it('loads a model from azurite with the account key and one from GCS, showing no key or SAS', async () => {
    const { account, accountKey, url } = azurite.current;
    await azurite.current.put('models', {
      'azure-m/model.onnx': 'azure weights',
      'azure-m/config.pbtxt': 'cfg',
    });
    await azurite.current.put('public', { 'sas-m/model.pt': 'sas weights' });
    gcs.put('models', 'gcs-m/1/model.savedmodel', 'gcs weights');
    const sas = azurite.current.sas('public');
    const { modelDir, flags } = await setUp({
      'azure-m': `${url}/${account}/models/azure-m`,
      'sas-m': `${url}/${account}/public/sas-m?${sas}`,
      'gcs-m': 'gs://models/gcs-m',
    });
    const agent = startCli(cliArgs(flags), { env: { AZURE_STORAGE_ACCESS_KEY: accountKey } });

    await waitFor(
      () => standIn!.loaded.size === 3,
      30_000,
      () => `three loads: ${agent.transcript()}`,
    );
    expect(await readFiles(join(modelDir, 'azure-m'))).toMatchObject({
      'model.onnx': 'azure weights',
      'config.pbtxt': 'cfg',
    });
    expect(await readFiles(join(modelDir, 'sas-m'))).toMatchObject({ 'model.pt': 'sas weights' });
    expect(await readFiles(join(modelDir, 'gcs-m'))).toMatchObject({ '1/model.savedmodel': 'gcs weights' });
    await agent.signalAndWait('SIGTERM');
    const scan = new SecretScan([
      { label: 'account key', value: accountKey },
      { label: 'SAS signature', value: new URLSearchParams(sas).get('sig')! },
    ]);
    scan.add('stderr', agent.stderr.text).add('stdout', agent.stdout.text).expectNoLeaks();
    expect(scan.size.chars).toBeGreaterThan(0);
    expect(agent.otherLines).toEqual([]);
  });

  it('fails a model of a missing container for good, naming it, and loads the others', async () => {
    const { account, accountKey, url } = azurite.current;
    await azurite.current.put('models', { 'fine/model.bin': 'fine' });
    const { flags } = await setUp({
      fine: `${url}/${account}/models/fine`,
      lost: `${url}/${account}/no-such-container/lost`,
    });
    const agent = startCli(cliArgs(flags), { env: { AZURE_STORAGE_ACCESS_KEY: accountKey } });
    const failed = await agent.waitForLog(
      (log) => log['msg'] === 'model failed' && log['model'] === 'lost',
      30_000,
    );
    expect(failed).toMatchObject({ errorKind: 'not-found', attempt: 1 });
    expect(failed['reason']).toContain('no-such-container');
    await waitFor(() => standIn!.loaded.has('fine'), 30_000, 'the fine model to load');
  });

  it('asks DefaultAzureCredential for a token when AZURE_CLIENT_ID is set: refused, the model fails for good', async () => {
    const clientSecret = 'client-secret-0123456789abcdef';
    const { flags } = await setUp({ aad: 'https://modelsync.blob.core.windows.net/models/aad' });
    const agent = startCli(cliArgs(flags), {
      env: {
        AZURE_CLIENT_ID: '11111111-1111-1111-1111-111111111111',
        AZURE_TENANT_ID: '22222222-2222-2222-2222-222222222222',
        AZURE_CLIENT_SECRET: clientSecret,
        // An identity endpoint that cannot answer: the token request fails before any blob request is made.
        AZURE_AUTHORITY_HOST: 'https://127.0.0.1:9/',
      },
    });
    const failed = await agent.waitForLog((log) => log['msg'] === 'model failed', 30_000);
    expect(failed).toMatchObject({ model: 'aad', errorKind: 'http-status', attempt: 1 });
    expect(failed['reason']).toContain('https://modelsync.blob.core.windows.net/models/aad (Azure AD)');
    expect(failed['reason']).toContain('EnvironmentCredential authentication failed');
    new SecretScan([{ label: 'client secret', value: clientSecret }])
      .add('stderr', agent.stderr.text)
      .expectNoLeaks();
  });

  it('leaves no staging dir when SIGTERM arrives mid-download', async () => {
    gcs.put('models', 'stalled/weights.bin', Buffer.alloc(2_000_000, 3));
    // The body stops after 1 MB, its connection left open: the download waits for bytes that never come.
    gcs.injectFault('media', { stallAfterBytes: 1_000_000 });
    const { modelDir, flags } = await setUp({ stalled: 'gs://models/stalled' });
    const agent = startCli(cliArgs(flags));
    await waitFor(
      async () => {
        const staged = (await listTree(modelDir)).filter(
          (p) => p.startsWith('.tmp-') && p.endsWith('weights.bin'),
        );
        return staged.length === 1 && (await stat(join(modelDir, staged[0]!))).size > 0;
      },
      30_000,
      () => `a partial download in a staging dir: ${agent.transcript()}`,
    );
    const exit = await agent.signalAndWait('SIGTERM');
    expect(exit.code).toBe(0);
    expect(await listTree(modelDir)).toEqual([loadJournalFileName]);
  });
});
