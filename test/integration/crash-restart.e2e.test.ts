/**
 * Acceptance: the real agent process killed with SIGKILL at a pinned moment, then restarted. Kills at random
 * moments of a sync whose config keeps changing are the chaos suite (test/hardening/chaos/), on the same world.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer } from '../../src/testing/http-server';
import { waitFor } from '../../src/testing/wait';
import * as crash from '../hardening/chaos/crash-kit';
import { cliArgs, startCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';

const loadRoute = /^\/v2\/repository\/models\/([^/]+)\/load$/;

/**
 * A pass-through proxy in front of the model-server stand-in. Loads of a name in `held` are never forwarded (the
 * request hangs), which pins the moment between a swap and its load.
 */
const startServerProxy = async (target: string) => {
  const held = new Set<string>();
  const heldRequests: string[] = [];
  const server = await startHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://proxy').pathname;
    const match = loadRoute.exec(path);
    const name = match === null ? undefined : decodeURIComponent(match[1]!);
    if (name !== undefined && held.has(name)) {
      heldRequests.push(name);
      return;
    }
    const upstream = request(
      `${target}${req.url ?? '/'}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return { url: server.url, held, heldRequests, close: server.close };
};

const tmp = useTempDir('crash');
const { keep } = crash.useCrashWorlds();

describe('the agent process under kill -9 and restart', () => {
  it('loads the new version when killed after a changed model was swapped in but before its load', async () => {
    const names = ['a', 'b', 'c'];
    const catalog = crash.modelCatalog(join(tmp.path, 'scratch'), (name) => names.indexOf(name));
    const env = keep(await crash.crashWorld(tmp.path, catalog, 10));
    const proxy = keep(await startServerProxy(env.standIn.url));
    env.writeConfig(names.map((name) => env.entry(name, 'v1')));
    const first = startCli(cliArgs(env.flags(proxy.url)));
    await first.waitForLog('start-up sync complete; ready', 60_000);
    expect(crash.servedVersions(env.standIn).get('b')).toBe(env.entry('b', 'v1').modelSpec.storageUri);

    // b changes; its load is held at the proxy, so the server still serves v1 when the agent dies.
    proxy.held.add('b');
    const next = [env.entry('a', 'v1'), env.entry('b', 'v2'), env.entry('c', 'v1')];
    const logsBefore = first.logs.length;
    env.writeConfig(next);
    await first.waitForLog((log) => log.msg === 'model loading' && log['model'] === 'b', 30_000, logsBefore);
    await waitFor(() => proxy.heldRequests.length > 0, 10_000, 'the load of b at the proxy');
    expect(proxy.heldRequests).toEqual(['b']);
    await first.signalAndWait('SIGKILL');
    proxy.held.clear();
    expect(await crash.markerUriOf(env.modelDir, 'b')).toBe(env.entry('b', 'v2').modelSpec.storageUri);

    const second = startCli(cliArgs(env.flags(proxy.url)));
    await second.waitForLog('start-up sync complete; ready', 60_000);
    expect([...env.standIn.loaded].sort()).toEqual(names);
    expect(crash.servedVersions(env.standIn).get('b')).toBe(env.entry('b', 'v2').modelSpec.storageUri);
    expect(env.standIn.loads.filter((load) => !load.complete || load.problem !== undefined)).toEqual([]);
    await crash.expectModelDirToHold(env.modelDir, next, catalog);
  }, 120_000);
});

describe('the agent process killed while a swapped-in version waits for a load slot', () => {
  it('loads that version after the restart, though the server still served the old one', async () => {
    const names = ['a', 'b'];
    const catalog = crash.modelCatalog(join(tmp.path, 'scratch'), (name) => names.indexOf(name));
    const env = keep(await crash.crashWorld(tmp.path, catalog, 10));
    const proxy = keep(await startServerProxy(env.standIn.url));
    const flags = { ...env.flags(proxy.url), 'load-concurrency': 1 };
    env.writeConfig(names.map((name) => env.entry(name, 'v1')));
    const first = startCli(cliArgs(flags));
    await first.waitForLog('start-up sync complete; ready', 60_000);

    // Both change; a's load hangs at the proxy and holds the one load slot, so b waits after its swap.
    proxy.held.add('a');
    env.writeConfig(names.map((name) => env.entry(name, 'v2')));
    const v2 = env.entry('b', 'v2').modelSpec.storageUri;
    await waitFor(async () => (await crash.markerUriOf(env.modelDir, 'b')) === v2, 30_000, 'b v2 swapped in');
    await first.signalAndWait('SIGKILL');
    proxy.held.clear();
    expect(crash.servedVersions(env.standIn).get('b')).toBe(env.entry('b', 'v1').modelSpec.storageUri);

    const second = startCli(cliArgs(flags));
    await second.waitForLog('start-up sync complete; ready', 60_000);
    expect(crash.servedVersions(env.standIn)).toEqual(
      new Map(names.map((name) => [name, env.entry(name, 'v2').modelSpec.storageUri])),
    );
  }, 120_000);
});

describe('the agent process restarted while models.json holds a rejected edit', () => {
  it('loads again, without a download, the installed models the restarted server lost, and turns ready', async () => {
    const names = ['a', 'b'];
    const catalog = crash.modelCatalog(join(tmp.path, 'scratch'), (name) => names.indexOf(name));
    const env = keep(await crash.crashWorld(tmp.path, catalog, 10));
    const entries = names.map((name) => env.entry(name, 'v1'));
    env.writeConfig(entries);
    const first = startCli(cliArgs(env.flags()));
    await first.waitForLog('start-up sync complete; ready', 60_000);
    const logsBefore = first.logs.length;
    atomicWrite(env.configDir, { 'models.json': '[{"modelName": "a", ' }); // a bad edit: rejected, nothing changes
    await first.waitForLog('config rejected; keeping the previous models', 30_000, logsBefore);
    await first.signalAndWait('SIGKILL');
    // The model server restarted too, and forgot what it had loaded.
    for (const name of names)
      await fetch(`${env.standIn.url}/v2/repository/models/${name}/unload`, { method: 'POST' });
    expect([...env.standIn.loaded]).toEqual([]);

    const second = startCli(cliArgs(env.flags()));
    await second.waitForLog('start-up sync complete; ready', 60_000);
    expect([...env.standIn.loaded].sort()).toEqual(names);
    expect(second.logs.filter((log) => log.msg === 'model downloading')).toEqual([]);
    expect(env.standIn.loads.filter((load) => !load.complete || load.problem !== undefined)).toEqual([]);
    await crash.expectModelDirToHold(env.modelDir, entries, catalog);
  }, 120_000);
});
