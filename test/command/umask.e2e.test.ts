/**
 * The modes of what modelsync writes for the model server, on the real process, whatever umask its container gives
 * it: the model server reads the model dir as another user (deploy/base: modelsync 65532, the server 1000), so a
 * model's files and dirs are readable and traversable by all, and writable by modelsync alone.
 */
import { lstat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, runCli } from '../helpers/cli-process';
import { listTree } from '../helpers/file-tree';
import { modelsJson } from '../helpers/fixtures';
import { startStorageServer, type StorageServer } from '../helpers/storage-server';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('umask');
let storage: StorageServer;
let server: V2ModelServerStandIn | undefined;
beforeEach(async () => {
  storage = await startStorageServer();
});
afterEach(async () => {
  await storage.close();
  await server?.close();
  server = undefined;
});

/** Runs the CLI's process under `umask` (a shell that sets it, then execs node), as a container's entry would. */
const underUmask = (umask: string): ReadonlyArray<string> => [
  'sh',
  '-c',
  `umask ${umask} && exec "$@"`,
  'sh',
];

/** The permission bits of every entry under `root` (but the marker and the journal, ours alone), by path. */
const modesUnder = async (root: string): Promise<Record<string, string>> => {
  const modes: Record<string, string> = {};
  for (const entry of await listTree(root)) {
    if (/(^|\/)SUCCESS\.|\.modelsync-journal/.test(entry)) continue;
    modes[entry] = ((await lstat(join(root, entry))).mode & 0o7777).toString(8);
  }
  return modes;
};

/** Serves an archive (`/models/iris.tar.gz`, a file in a subdir) and one file (`/models/weights.bin`). */
const serveTwoModels = async (): Promise<void> => {
  await storage.tarGz('/models/iris.tar.gz', { 'model.joblib': 'joblib', 'meta/info.json': '{}' });
  storage.file('/models/weights.bin', 'weights');
};

/** The modes of serveTwoModels' models installed as `archive` and `file`: readable by all, writable by us alone. */
const twoModelsModes = {
  'archive/': '755',
  'archive/meta/': '755',
  'archive/meta/info.json': '644',
  'archive/model.joblib': '644',
  'file/': '755',
  'file/weights.bin': '644',
};

describe("the modes of a model's files under the process's umask", () => {
  it.each(['077', '000', '002'])(
    'gives the storage initializer files 644 and dirs 755 under umask %s',
    async (umask) => {
      await serveTwoModels();

      const result = await runCli(
        [
          `${storage.url}/models/iris.tar.gz`,
          join(tmp.path, 'archive'),
          `${storage.url}/models/weights.bin`,
          join(tmp.path, 'file'),
        ],
        { within: underUmask(umask), timeoutMs: 30_000 },
      );

      expect(result.code).toBe(0);
      // The dests too: KServe's /mnt/models is there already, a dest of one's own is made.
      expect(await modesUnder(tmp.path)).toEqual(twoModelsModes);
    },
    40_000,
  );

  it.each(['077', '000'])(
    'gives the models of a one-shot sync files 644 and dirs 755 under umask %s',
    async (umask) => {
      await serveTwoModels();
      const [configDir, modelDir] = [join(tmp.path, 'config'), join(tmp.path, 'models')];
      await Promise.all([mkdir(configDir), mkdir(modelDir)]);
      atomicWrite(configDir, {
        'models.json': modelsJson({
          archive: `${storage.url}/models/iris.tar.gz`,
          file: `${storage.url}/models/weights.bin`,
        }),
      });
      server = await startV2ModelServer();

      const result = await runCli(
        cliArgs({ 'config-dir': configDir, 'model-dir': modelDir, 'server-url': server.url, once: true }),
        { within: underUmask(umask), timeoutMs: 30_000 },
      );

      expect(result.code).toBe(0);
      expect(await modesUnder(modelDir)).toEqual(twoModelsModes);
    },
    40_000,
  );
});
