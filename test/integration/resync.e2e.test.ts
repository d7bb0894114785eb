/**
 * Acceptance (issue #9): resync and drift repair on the real CLI process — a model server that restarts empty, a
 * model someone unloaded, a model loaded that the config does not list, a model failed by a 500, SIGHUP.
 */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { modelsJson } from '../helpers/fixtures';
import { killAllCli, startCli, cliArgs, type CliProcess } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';
import { waitFor } from '../../src/testing/wait';
import { about, linesWithDuplicateKeys, resyncWorld, type ResyncWorld } from './resync-world';

let world: ResyncWorld;
// Declared before the temp dir's: hooks after a test run in the order declared, so the dir goes once no process
// writes in it any more (removed under a live CLI, it can fail ENOTEMPTY).
afterEach(async () => {
  await killAllCli();
  await world.close();
});
const tmp = useTempDir('resync');
beforeEach(async () => {
  world = await resyncWorld(tmp.path);
  await Promise.all(['a', 'b'].map((name) => world.addModel(name)));
  world.writeConfig(['a', 'b']);
});

const unloadAtServer = (url: string, name: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const call = request(`${url}/v2/repository/models/${name}/unload`, { method: 'POST' }, (answer) => {
      answer.resume();
      resolve(answer.statusCode ?? 0);
    });
    call.on('error', reject).end();
  });

const started = async (extra: Record<string, string | number | boolean> = {}): Promise<CliProcess> => {
  const cli = startCli(cliArgs(world.flags(extra)));
  await cli.waitForLog('start-up sync complete; ready', 30_000);
  return cli;
};

const loadedNow = (): string[] => [...world.server().loaded].sort();

describe('resync and drift repair (real CLI)', () => {
  it('loads every model again in one resync when the model server restarts empty', async () => {
    // No timer: the one resync is the one SIGHUP asks for, however long the loads take here.
    const cli = await started({ 'resync-interval': '0' });
    expect(loadedNow()).toEqual(['a', 'b']);
    await world.restartServerEmpty();
    cli.child.kill('SIGHUP');
    await waitFor(() => loadedNow().length === 2, 20_000, 'a and b loaded on the restarted server');
    for (const model of ['a', 'b']) {
      const line = await cli.waitForLog(
        about('drift: the model server lost the model; loading it again', model),
      );
      expect(line).toMatchObject({ repair: 'reload-lost', component: 'resync', level: 'info' });
    }
    expect(linesWithDuplicateKeys(cli.stderr.lines)).toEqual([]);
  }, 30_000);

  it('loads again a model someone unloaded and unloads one the config does not list', async () => {
    const cli = await started({ 'resync-interval': '1s' });
    world.server().preload('stray');
    expect(await unloadAtServer(world.server().url, 'a')).toBe(200);
    await waitFor(() => loadedNow().join() === 'a,b', 10_000, 'a loaded again and stray unloaded');
    await cli.waitForLog(
      about('drift: the model server has a model the config does not list; unloading it', 'stray'),
    );
    await cli.waitForLog(about('drift: the model server lost the model; loading it again', 'a'));
    expect(cli.logs.filter((log) => log['repair'] !== undefined).map((log) => log['model'])).toEqual(
      expect.arrayContaining(['a', 'stray']),
    );
  }, 30_000);

  it('heals a model failed by a 500 once the server answers again, without a spec change', async () => {
    world.server().failNextLoads(1, 500);
    const cli = await started({ 'resync-interval': '1s', 'max-attempts': 1 });
    const failed = cli.logs.find((log) => log.msg === 'model failed');
    // A failure is one line: model, kind, status and message, and no stack at info.
    expect(failed).toMatchObject({ errorKind: 'http-status', status: 500, phase: 'Failed' });
    expect(typeof failed?.['model']).toBe('string');
    expect(JSON.stringify(failed)).not.toContain('    at ');
    const model = failed!['model'] as string;
    await cli.waitForLog(about('drift: retrying a failed model', model), 10_000);
    await cli.waitForLog(about('model loaded', model), 10_000);
    expect(loadedNow()).toEqual(['a', 'b']);
  }, 30_000);

  it('retries an unload that keeps failing at each due resync until it succeeds', async () => {
    const cli = await started({ 'resync-interval': '1s', 'max-attempts': 1 });
    world.server().injectFault('unload', { status: 500, body: 'busy' }, 2);
    world.writeConfig(['a']);
    await cli.waitForLog(
      (log) => log.msg === 'model failed' && log['model'] === 'b' && log['status'] === 500,
    );
    expect(loadedNow()).toEqual(['a', 'b']);
    // The first retry (one interval on) meets the second 500; the next, two intervals later, succeeds.
    await waitFor(() => loadedNow().join() === 'a', 10_000, 'b unloaded at last');
    await cli.waitForLog(about('model removed', 'b'));
    expect(cli.logs.filter(about('drift: retrying a failed unload', 'b')).length).toBe(2);
  }, 30_000);

  it('resyncs on SIGHUP at once, with no timer (--resync-interval 0)', async () => {
    const cli = await started({ 'resync-interval': '0' });
    world.server().preload('stray');
    cli.child.kill('SIGHUP');
    await waitFor(() => !world.server().loaded.has('stray'), 5000, 'stray unloaded after SIGHUP');
    await cli.waitForLog(about('model removed', 'stray'));
    expect(cli.child.exitCode).toBeNull(); // SIGHUP does not end it
  }, 30_000);

  it('re-reads models.json on a resync, so a change the watcher cannot see is applied', async () => {
    // models.json is a link to a file outside the config dir: the watcher (on the dir, links not followed) never
    // sees that file change; only a re-read does.
    const outside = join(tmp.path, 'outside.json');
    await writeFile(outside, modelsJson({ a: join(world.storageDir, 'a'), b: join(world.storageDir, 'b') }));
    await rm(world.configDir, { recursive: true, force: true });
    await mkdir(world.configDir);
    await symlink(outside, join(world.configDir, 'models.json'));
    const cli = await started({ 'resync-interval': '0' });
    await cli.waitForQuiet(500); // the watcher's own start-up reads are done
    await world.addModel('c');
    await writeFile(
      outside,
      modelsJson(Object.fromEntries(['a', 'b', 'c'].map((model) => [model, join(world.storageDir, model)]))),
    );
    await cli.waitForQuiet(1000);
    expect(loadedNow()).toEqual(['a', 'b']);
    cli.child.kill('SIGHUP');
    await waitFor(() => loadedNow().join() === 'a,b,c', 5000, 'c loaded after SIGHUP');
  }, 30_000);
});
