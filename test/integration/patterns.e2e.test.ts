/**
 * End to end on the real process (`dist/cli.js`), in sync mode with a V2 stand-in: a model's `allowPatterns` and
 * `ignorePatterns` (only the files they take land; a changed pattern downloads the model again), and a
 * `pvc://<claim>/<path>` model read from under `--pvc-mount-root`.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer } from '../../src/testing/http-server';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, startCli, type CliProcess } from '../helpers/cli-process';
import { listTree, writeFiles } from '../helpers/file-tree';
import type { LogLine } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('patterns-e2e');

const llm = {
  'config.json': '{}',
  'tokenizer.json': '{"v":1}',
  'tokenizer_config.json': '{}',
  'model-00001-of-00002.safetensors': 'w1',
  'model-00002-of-00002.safetensors': 'w2',
  'original/params.json': '{}',
  'original/consolidated.pth': 'pth',
};

const loadedLine = (model: string) => (log: LogLine) =>
  log['msg'] === 'model loaded' && log['model'] === model;

/** The files of `dir` but the marker, by name (with `--local-model-files link`, `name -> where it lies`). */
const modelFiles = async (dir: string): Promise<string[]> =>
  (await listTree(dir)).filter((file) => !file.startsWith('SUCCESS.')).map((file) => file.split(' -> ')[0]!);

describe('patterns and pvc:// on the real process', () => {
  let server: V2ModelServerStandIn | undefined;
  afterEach(async () => {
    await server?.close();
  });

  /** The agent on `models` in config and model dirs of run `run`'s own. */
  const start = async (
    run: string,
    models: ReadonlyArray<Readonly<Record<string, unknown>>>,
    flags: Readonly<Record<string, string>>,
  ): Promise<{ agent: CliProcess; configDir: string; modelDir: string; server: V2ModelServerStandIn }> => {
    const configDir = join(tmp.path, `configs-${run}`);
    const modelDir = join(tmp.path, `models-${run}`);
    mkdirSync(modelDir, { recursive: true });
    atomicWrite(configDir, { 'models.json': JSON.stringify(models) });
    server = await startV2ModelServer({ modelDir });
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': server.url,
        'retry-base-ms': 10,
        'retry-max-ms': 50,
        ...flags,
      }),
    );
    return { agent, configDir, modelDir, server };
  };

  it('lands only the files the patterns take, from a local dir and a pvc:// claim, and fetches nothing else', async () => {
    const pvcRoot = join(tmp.path, 'claim');
    const localRoot = join(tmp.path, 'local');
    await writeFiles(join(pvcRoot, 'models', 'm1'), llm);
    await writeFiles(join(localRoot, 'llama'), llm);
    const requested: string[] = [];
    const http = await startHttpServer((req, res) => {
      requested.push(req.url ?? '');
      res.writeHead(200, { 'content-length': 2 }).end('w1');
    });
    try {
      const select = { allowPatterns: ['*.json', 'tokenizer*'], ignorePatterns: ['original/'] };
      const { agent, modelDir } = await start(
        'select',
        [
          { modelName: 'from-pvc', modelSpec: { storageUri: 'pvc://models-claim/models/m1', ...select } },
          { modelName: 'from-dir', modelSpec: { storageUri: join(localRoot, 'llama'), ...select } },
          {
            modelName: 'from-http',
            modelSpec: { storageUri: `${http.url}/model-00001-of-00002.safetensors`, ...select },
          },
        ],
        { 'pvc-mount-root': pvcRoot, 'local-storage-roots': localRoot },
      );
      await agent.waitForLog(loadedLine('from-pvc'), 30_000);
      await agent.waitForLog(loadedLine('from-dir'), 30_000);
      const failed = await agent.waitForLog(
        (log) => log['model'] === 'from-http' && log['phase'] === 'Failed',
        30_000,
      );
      expect(failed).toMatchObject({ errorKind: 'not-found' });
      const tokenizer = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];
      expect(await modelFiles(join(modelDir, 'from-pvc'))).toEqual(tokenizer);
      expect(await modelFiles(join(modelDir, 'from-dir'))).toEqual(tokenizer);
      // The one file of the http model is not selected: decided before any request.
      expect(requested).toEqual([]);
      expect(agent.otherLines).toEqual([]);
    } finally {
      await http.close();
    }
  });

  it('downloads a model again, with the new files, when its patterns change', async () => {
    const pvcRoot = join(tmp.path, 'claim-change');
    await writeFiles(join(pvcRoot, 'models', 'm1'), llm);
    const model = (allowPatterns: ReadonlyArray<string>) => ({
      modelName: 'm1',
      modelSpec: { storageUri: 'pvc://c/models/m1', allowPatterns },
    });
    const {
      agent,
      configDir,
      modelDir,
      server: v2,
    } = await start('change', [model(['tokenizer*'])], {
      'pvc-mount-root': pvcRoot,
    });
    await agent.waitForLog(loadedLine('m1'), 30_000);
    expect(await modelFiles(join(modelDir, 'm1'))).toEqual(['tokenizer.json', 'tokenizer_config.json']);

    const since = agent.logs.length;
    atomicWrite(configDir, { 'models.json': JSON.stringify([model(['*.safetensors'])]) });
    await agent.waitForLog(loadedLine('m1'), 30_000, since);

    expect(await modelFiles(join(modelDir, 'm1'))).toEqual([
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]);
    expect(v2.loads.filter((load) => load.name === 'm1' && load.status === 200)).toHaveLength(2);
    expect(await agent.signalAndWait('SIGTERM', 10_000)).toMatchObject({ code: 0 });
  });
});
