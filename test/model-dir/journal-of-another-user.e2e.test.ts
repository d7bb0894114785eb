/**
 * A load journal another user left in the model dir (the pod's uid changed over a kept volume; the journal is 0600):
 * modelsync may neither read nor write it, and every load needs a record there first.
 */
import { chmod, lstat, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadJournalFileName } from '../../src/model-dir/load-journal';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, runCli } from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import { startStorageServer, type StorageServer } from '../helpers/storage-server';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('journal-of-another-user');
let storage: StorageServer;
let server: V2ModelServerStandIn;
beforeEach(async () => {
  storage = await startStorageServer();
  server = await startV2ModelServer();
});
afterEach(async () => {
  await storage.close();
  await server.close();
});

/** The process as uid and gid 1000, no other group, no capability: not the journal's owner (root). */
const asAnotherUser = ['setpriv', '--reuid=1000', '--regid=1000', '--clear-groups'];

describe('a load journal of another user', () => {
  it('is replaced with one warn line naming it, and every model loads', async () => {
    storage.file('/models/iris/model.joblib', 'joblib');
    const [configDir, modelDir] = [join(tmp.path, 'config'), join(tmp.path, 'models')];
    await Promise.all([mkdir(configDir), mkdir(modelDir)]);
    atomicWrite(configDir, {
      'models.json': modelsJson({ iris: `${storage.url}/models/iris/model.joblib` }),
    });
    const journal = join(modelDir, loadJournalFileName);
    await writeFile(journal, '{"starting":"wine"}\n', { mode: 0o600 });
    // The temp dir is the test's user's alone (0700): the other user reaches and writes the model dir.
    await Promise.all([chmod(tmp.path, 0o755), chmod(modelDir, 0o777)]);

    const result = await runCli(
      cliArgs({ 'config-dir': configDir, 'model-dir': modelDir, 'server-url': server.url, once: true }),
      { within: asAnotherUser, timeoutMs: 30_000 },
    );

    expect({ code: result.code, loaded: [...server.loaded] }).toEqual({ code: 0, loaded: ['iris'] });
    expect(
      result.stderr.lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line['msg'] === 'the load journal is not a file modelsync wrote; replacing it')
        .map((line) => [line['path'], line['found']]),
    ).toEqual([[journal, expect.stringContaining("another user's")]]);
    expect((await lstat(journal)).uid).toBe(1000);
  }, 40_000);
});
