/**
 * On the real process: a model server whose index lists 20,000 invented names, and whose every unload hangs,
 * cannot keep a configured model from loading promptly, nor draw more than a few unloads at a time.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { sleep } from '../../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../../helpers/cli-process';
import { writeFiles } from '../../helpers/file-tree';
import { modelsJson } from '../../helpers/kube-api';
import { useTempDir } from '../../helpers/temp-dir';

let standIn: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await killAllCli();
  await standIn?.close();
  standIn = undefined;
});
const tmp = useTempDir('hostage');

describe('the agent process against a server inventing 20,000 models whose unloads hang', () => {
  it('loads the configured model within seconds and sends unloads only a few at a time', async () => {
    const storage = join(tmp.path, 'pvc');
    const modelDir = join(tmp.path, 'models');
    const configDir = join(tmp.path, 'config');
    mkdirSync(modelDir);
    await writeFiles(storage, { 'wanted/model.bin': 'w' });
    atomicWrite(configDir, { 'models.json': modelsJson(storage, ['wanted']) });
    standIn = await startV2ModelServer({ modelDir });
    standIn.preload(...Array.from({ length: 20_000 }, (_, i) => `invented-${i}`), '.tmp-not-a-model');
    standIn.injectFault('unload', { hang: true }, Infinity);
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'local-storage-roots': storage,
        'request-timeout-ms': 3000,
        'resync-interval': '1s',
      }),
    );
    await agent.waitForLog((line) => line['msg'] === 'model loaded' && line['model'] === 'wanted', 15_000);
    await sleep(3500); // a few resyncs, and the first unloads' timeouts
    const unloads = standIn.requests.filter((request) => request.path.endsWith('/unload'));
    expect(standIn.loaded.has('wanted')).toBe(true);
    expect(unloads.length).toBeLessThanOrEqual(3 * 2 + 2); // two lanes' worth per timeout, not thousands
    expect(unloads.some((request) => request.name === '.tmp-not-a-model')).toBe(false);
  });
});
