/**
 * On the real process beside the real Triton and MLServer: a model whose files give it another name (Triton's
 * config.pbtxt `name:`, MLServer's model-settings.json `"name"`) fails with a reason that names both names and
 * says they must match, instead of the server's bare "failed to poll" / "Model … not found"; the others load. The
 * same with `--local-model-files link`, whose small files (a model's config files) are copied for this check.
 * And MLServer, which reads every model-settings.json of its repository at each load: a model whose files nest one
 * naming another listed model is refused before its files reach the model dir, and the other model is served from
 * its own files.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import type { LogLine } from '../helpers/log-sink';
import { ensureRealServers } from '../real-servers/global-setup';
import { copyFixture, infer } from '../real-servers/models';
import { startRealServer, type RealServer } from '../real-servers/servers';

jest.setTimeout(180_000);
beforeAll(ensureRealServers, 15 * 60_000);

let root: string | undefined;
let server: RealServer | undefined;
afterEach(async () => {
  await killAllCli();
  await server?.stop();
  server = undefined;
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  root = undefined;
});

/** Gives the fixture at `dir` the name `other` inside its files, as each server reads it. */
const nameInFiles: Record<'triton' | 'mlserver', (dir: string, other: string) => void> = {
  triton: (dir, other) => {
    const file = join(dir, 'config.pbtxt');
    // A comment and the name after the nested blocks' own `name:` fields, as a hand-edited config has it.
    writeFileSync(file, `${readFileSync(file, 'utf8')}# renamed by hand\nname : '${other}'\n`);
  },
  mlserver: (dir, other) => {
    const file = join(dir, 'model-settings.json');
    const settings = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...settings, name: other }, null, 2));
  },
};

const isFailedLine =
  (model: string) =>
  (line: LogLine): boolean =>
    line.msg === 'model failed' && line['model'] === model;

describe.each<'triton' | 'mlserver'>(['triton', 'mlserver'])(
  '%s, with a model its files name otherwise',
  (kind) => {
    it.each(['copy', 'link'])(
      'fails the model with a reason naming both names, and loads the others (%s)',
      async (files) => {
        root = await mkdtemp(join(tmpdir(), `modelsync-misnamed-${kind}-`));
        const storage = join(root, 'storage');
        const modelDir = join(root, 'models');
        await mkdir(modelDir);
        nameInFiles[kind](copyFixture(kind, 'v1', storage, 'mm'), 'iris-v1');
        copyFixture(kind, 'v1', storage, 'good');
        const configDir = join(root, 'configs');
        atomicWrite(configDir, {
          'models.json': modelsJson({
            mm: { storageUri: join(storage, 'mm'), framework: kind },
            good: { storageUri: join(storage, 'good'), framework: kind },
          }),
        });
        server = await startRealServer(kind, { modelDir });
        const agent = startCli(
          cliArgs({
            'config-dir': configDir,
            'model-dir': modelDir,
            'server-url': server.url,
            'local-storage-roots': storage,
            'local-model-files': files,
            'retry-base-ms': 100,
            'retry-max-ms': 500,
          }),
        );
        const failed = await agent.waitForLog(isFailedLine('mm'), 60_000);
        await agent.waitForLog((line) => line.msg === 'model loaded' && line['model'] === 'good', 60_000);
        expect(failed['reason']).toEqual(expect.stringContaining('"mm"'));
        expect(failed['reason']).toEqual(expect.stringContaining('"iris-v1"'));
        expect(failed['reason']).toEqual(expect.stringContaining('must match'));
        expect(failed['errorKind']).toBe('refused');
      },
    );
  },
);

it("refuses a model whose files nest another model's model-settings.json, and serves that model from its own files", async () => {
  root = await mkdtemp(join(tmpdir(), 'modelsync-mlserver-settings-'));
  const storage = join(root, 'storage');
  const modelDir = join(root, 'models');
  await mkdir(modelDir);
  copyFixture('mlserver', 'v1', storage, 'good');
  // `intruder` is a good model of its own, carrying the v2 fixture in a folder, named `good` there.
  const nested = copyFixture(
    'mlserver',
    'v2',
    join(copyFixture('mlserver', 'v1', storage, 'intruder'), 'extra'),
    'v2',
  );
  const settingsFile = join(nested, 'model-settings.json');
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(settingsFile, JSON.stringify({ ...settings, name: 'good' }));
  const configDir = join(root, 'configs');
  atomicWrite(configDir, {
    'models.json': modelsJson({
      intruder: { storageUri: join(storage, 'intruder'), framework: 'mlserver' },
      good: { storageUri: join(storage, 'good'), framework: 'mlserver' },
    }),
  });
  server = await startRealServer('mlserver', { modelDir });
  const agent = startCli(
    cliArgs({
      'config-dir': configDir,
      'model-dir': modelDir,
      'server-url': server.url,
      'local-storage-roots': storage,
    }),
  );
  const failed = await agent.waitForLog(
    (line) => line.msg === 'model failed' && line['model'] === 'intruder',
    60_000,
  );
  await agent.waitForLog((line) => line.msg === 'model loaded' && line['model'] === 'good', 60_000);
  expect(failed['errorKind']).toBe('refused');
  expect(failed['reason']).toEqual(expect.stringContaining('extra/v2/model-settings.json'));
  expect(failed['reason']).toEqual(expect.stringContaining('MLServer would take for the model "good"'));
  expect(existsSync(join(modelDir, 'intruder'))).toBe(false);
  expect((await readdir(modelDir)).filter((entry) => !entry.startsWith('.'))).toEqual(['good']);
  expect(await infer(server, 'good')).toBe(1);
});
