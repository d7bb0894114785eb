/** Hostile config against the real process (`dist/cli.js`): it stays alive through configs that used to kill or block it. */
import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../../src/testing/wait';
import { cliArgs, killAllCli, startCli, type CliProcess } from '../../helpers/cli-process';
import { writeFiles } from '../../helpers/file-tree';
import type { LogLine } from '../../helpers/log-sink';
import { useTempDir } from '../../helpers/temp-dir';

const rejected = 'config rejected; keeping the previous models';
const deepArrays = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;

let standIn: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await killAllCli();
  await standIn?.close();
  standIn = undefined;
});
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('hostile-cli');

interface Setup {
  readonly configDir: string;
  readonly flags: Record<string, string | number>;
  readonly config: (...names: string[]) => string;
}

const setUp = async (): Promise<Setup> => {
  const configDir = join(tmp.path, 'configs');
  const modelDir = join(tmp.path, 'models');
  const storage = join(tmp.path, 'storage');
  await mkdir(configDir);
  await mkdir(modelDir);
  await writeFiles(storage, { 'model.bin': 'weights' });
  standIn = await startV2ModelServer({ modelDir });
  const uri = pathToFileURL(storage).href;
  return {
    configDir,
    flags: {
      'config-dir': configDir,
      'model-dir': modelDir,
      'local-storage-roots': storage,
      'server-url': standIn.url,
    },
    config: (...names) =>
      JSON.stringify(
        names.map((modelName) => ({ modelName, modelSpec: { storageUri: uri, framework: 'sklearn' } })),
      ),
  };
};

const acceptedWith = (modelCount: number) => (log: LogLine) =>
  log.msg === 'config accepted' && log['modelCount'] === modelCount;

/** Waits until `cli` has logged a rejection after log index `since`, and returns it. */
const rejection = (cli: CliProcess, since: number): Promise<LogLine> =>
  cli.waitForLog(rejected, 20_000, since);

const loaded = (...names: string[]): Promise<void> =>
  waitFor(() => names.every((name) => standIn!.loaded.has(name)), 20_000, `${names.join(', ')} to be loaded`);

describe('the real process on hostile config', () => {
  it('stays alive when it starts on 10,000 nested arrays, and applies the next valid config', async () => {
    const { configDir, flags, config } = await setUp();
    atomicWrite(configDir, { 'models.json': deepArrays });
    const cli = startCli(cliArgs(flags));
    expect((await rejection(cli, 0))['reason']).toContain(
      'nested deeper than 64 levels of arrays and objects',
    );
    const since = cli.logs.length;
    atomicWrite(configDir, { 'models.json': config('m') });
    await cli.waitForLog(acceptedWith(1), 20_000, since);
    await loaded('m');
    expect(cli.child.exitCode).toBeNull();
  }, 60_000);

  it('stays alive when 10,000 nested arrays come as an update, keeping the model it had loaded', async () => {
    const { configDir, flags, config } = await setUp();
    atomicWrite(configDir, { 'models.json': config('m') });
    const cli = startCli(cliArgs(flags));
    await cli.waitForLog('start-up sync complete; ready', 30_000);
    const since = cli.logs.length;
    atomicWrite(configDir, { 'models.json': deepArrays });
    await rejection(cli, since);
    await sleep(300); // a crash would come now: the old formatter threw right after the read
    expect(cli.child.exitCode).toBeNull();
    expect(standIn!.loaded.has('m')).toBe(true);
    atomicWrite(configDir, { 'models.json': config('m', 'n') });
    await cli.waitForLog(acceptedWith(2), 20_000, since);
    await loaded('m', 'n');
    expect(standIn!.requests.filter((request) => request.path.endsWith('/unload'))).toEqual([]);
  }, 60_000);

  it('logs a FIFO as models.json at start instead of blocking on it, and reads the config that replaces it', async () => {
    const { configDir, flags, config } = await setUp();
    execFileSync('mkfifo', [join(configDir, 'models.json')]);
    const cli = startCli(cliArgs(flags));
    expect((await rejection(cli, 0))['reason']).toContain('it is a FIFO (named pipe), not a regular file');
    const since = cli.logs.length;
    atomicWrite(configDir, { 'models.json': config('m') });
    await cli.waitForLog(acceptedWith(1), 20_000, since);
    await loaded('m');
  }, 60_000);

  it('refuses a models.json over --max-config-bytes, naming its size and the flag', async () => {
    const { configDir, flags, config } = await setUp();
    atomicWrite(configDir, { 'models.json': config('m') });
    const cli = startCli(cliArgs({ ...flags, 'max-config-bytes': 1000 }));
    await loaded('m');
    const since = cli.logs.length;
    const big = config(...Array.from({ length: 20 }, (_, i) => `m${i}`));
    atomicWrite(configDir, { 'models.json': big });
    expect((await rejection(cli, since))['reason']).toBe(
      `${join(configDir, 'models.json')} is ${big.length} bytes, over the limit of 1000 bytes ` +
        '(--max-config-bytes); it was not read',
    );
    expect(cli.child.exitCode).toBeNull();
  }, 60_000);
});
