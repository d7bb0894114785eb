/**
 * End to end on the real process (`dist/cli.js`) with a V2 stand-in: a 1 GiB `pvc://` model is linked, not copied
 * (`--local-model-files link`): ready with no byte of it in the model dir, and a restart reads nothing again;
 * `--local-model-files copy` (the default) copies.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { readFile, realpath, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, startCli, type CliProcess } from '../helpers/cli-process';
import { listTree } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('pvc-links-e2e');

const GiB = 2 ** 30;
/** Bytes the blocks under `dir` take on disk (du), links and dirs included. */
const diskBytes = (dir: string): number =>
  Number(execFileSync('du', ['-s', '--block-size=1', dir]).toString().split('\t')[0]);

describe('a pvc:// model on the real process', () => {
  let server: V2ModelServerStandIn | undefined;
  afterEach(async () => {
    await server?.close();
  });

  /** A claim holding models/llm: a 1 GiB sparse weights file and a config, and the agent's dirs for `run`. */
  const world = async (run: string) => {
    const claim = join(await realpath(tmp.path), `claim-${run}`);
    const source = join(claim, 'models', 'llm');
    mkdirSync(source, { recursive: true });
    await writeFile(join(source, 'weights.bin'), 'w');
    await truncate(join(source, 'weights.bin'), GiB);
    await writeFile(join(source, 'config.json'), '{"layers":2}');
    const configDir = join(tmp.path, `configs-${run}`);
    const modelDir = join(tmp.path, `models-${run}`);
    mkdirSync(modelDir, { recursive: true });
    atomicWrite(configDir, {
      'models.json': JSON.stringify([
        { modelName: 'llm', modelSpec: { storageUri: 'pvc://models-claim/models/llm', framework: 'onnx' } },
      ]),
    });
    server = await startV2ModelServer({ modelDir });
    const flags = { 'config-dir': configDir, 'model-dir': modelDir, 'server-url': server.url };
    const start = (more: Readonly<Record<string, string>> = {}): CliProcess =>
      startCli(cliArgs({ ...flags, 'pvc-mount-root': claim, ...more }));
    return { source, modelDir, server, start };
  };

  it('links a 1 GiB model: ready with ~0 bytes in the model dir, and a restart reads nothing again', async () => {
    const { source, modelDir, server, start } = await world('link');
    const first = start({ 'local-model-files': 'link' });
    await first.waitForLog('start-up sync complete; ready', 30_000);
    expect(server.loaded).toEqual(new Set(['llm']));
    const files = (await listTree(join(modelDir, 'llm'))).filter((file) => !file.startsWith('SUCCESS.'));
    // The weights linked; the config (under 1 MiB) copied, a file of the model dir the checks before a load read.
    expect(files).toEqual(['config.json', `weights.bin -> ${join(source, 'weights.bin')}`]);
    expect(await readFile(join(modelDir, 'llm', 'config.json'), 'utf8')).toBe('{"layers":2}');
    expect(diskBytes(modelDir)).toBeLessThan(256 * 1024);
    await first.signalAndWait('SIGTERM');

    const loadsBefore = server.loads.length;
    const second = start({ 'local-model-files': 'link' });
    await second.waitForLog('start-up sync complete; ready', 30_000);
    expect(second.logs.filter((log) => log.msg === 'model downloading')).toEqual([]);
    expect(server.loads.length).toBe(loadsBefore);
    expect(await listTree(join(modelDir, 'llm'))).toEqual(expect.arrayContaining(files));
    await second.signalAndWait('SIGTERM');
  });

  it('copies by default', async () => {
    const { modelDir, server, start } = await world('copy');
    const agent = start();
    await agent.waitForLog('start-up sync complete; ready', 60_000);
    expect(server.loaded).toEqual(new Set(['llm']));
    expect((await listTree(join(modelDir, 'llm'))).filter((file) => !file.startsWith('SUCCESS.'))).toEqual([
      'config.json',
      'weights.bin',
    ]);
    await agent.signalAndWait('SIGTERM');
  });
});
