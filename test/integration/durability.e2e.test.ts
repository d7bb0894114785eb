/**
 * Acceptance (issue #10): no fsync on a load's path, so after a power loss a model's files may be cut short behind
 * its marker. The real agent, restarted on such a model dir, finds it and downloads that model again, nothing else.
 */
import { readdir, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import * as crash from '../hardening/chaos/crash-kit';
import { cliArgs, startCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('durability');
const { keep } = crash.useCrashWorlds();

describe('the agent process restarted on model files cut short after their marker', () => {
  it('downloads and loads again the model whose file is short, and only that one', async () => {
    const names = ['a', 'b', 'c'];
    const catalog = crash.modelCatalog(join(tmp.path, 'scratch'), (name) => names.indexOf(name));
    const env = keep(await crash.crashWorld(tmp.path, catalog, 5));
    const entries = names.map((name) => env.entry(name, 'v1'));
    env.writeConfig(entries);
    const first = startCli(cliArgs(env.flags()));
    await first.waitForLog('start-up sync complete; ready', 60_000);
    await first.signalAndWait('SIGKILL');

    // What a power cut before the background flush can leave: the marker, and a file shorter than it says.
    const dir = join(env.modelDir, 'b');
    const file = (await readdir(dir, { recursive: true, withFileTypes: true })).find(
      (entry) => entry.isFile() && !entry.name.startsWith('SUCCESS.'),
    )!;
    await truncate(join(file.parentPath, file.name), 100);

    env.storage.state.run = 1;
    const second = startCli(cliArgs(env.flags()));
    await second.waitForLog('start-up sync complete; ready', 60_000);
    expect(second.logs.filter((log) => log.msg.startsWith('model files do not match their marker'))).toEqual([
      expect.objectContaining({ model: 'b', level: 'warn' }),
    ]);
    expect(env.storage.gets.filter((get) => get.run === 1).map((get) => get.path)).toEqual([
      new URL(env.entry('b', 'v1').modelSpec.storageUri).pathname,
    ]);
    expect([...env.standIn.loaded].sort()).toEqual(names);
    await crash.expectModelDirToHold(env.modelDir, entries, catalog);
  }, 120_000);
});
