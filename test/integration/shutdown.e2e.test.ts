/**
 * Acceptance (issue #9): SIGTERM/SIGINT on the real CLI — downloads stop and leave no staging dir, load calls in
 * flight finish up to --shutdown-timeout, and the process exits 0.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { sleep, waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import { useTempDir } from '../helpers/temp-dir';
import { about, resyncWorld, type ResyncWorld } from './resync-world';

let world: ResyncWorld;
let storage: RunningHttpServer | undefined;
// Declared before the temp dir's: hooks after a test run in the order declared, so the dir goes once no process
// writes in it any more (removed under a live CLI, it can fail ENOTEMPTY).
afterEach(async () => {
  await killAllCli();
  await storage?.close();
  storage = undefined;
  await world.close();
});
const tmp = useTempDir('shutdown');
beforeEach(async () => {
  world = await resyncWorld(tmp.path);
  await world.addModel('a');
});

/** A storage server that announces 64 MiB, sends 64 KiB of it, then nothing more (a download that hangs). */
const hangingStorage = async (): Promise<RunningHttpServer> =>
  startHttpServer((_request, response) => {
    response.writeHead(200, { 'Content-Length': String(64 * 2 ** 20) });
    response.write(Buffer.alloc(64 * 1024));
  });

const modelDirEntries = async (): Promise<string[]> => (await readdir(world.modelDir)).sort();

describe('shutdown on SIGTERM/SIGINT (real CLI)', () => {
  it('aborts a download in progress, removes its staging dir and exits 0 at once', async () => {
    storage = await hangingStorage();
    atomicWrite(world.configDir, { 'models.json': modelsJson({ big: `${storage.url}/big.bin` }) });
    // The shutdown timeout is a minute away: an exit within the wait, stopped with nothing left in flight, is a
    // download that did not wait for it.
    const cli = startCli(cliArgs(world.flags({ 'shutdown-timeout': '60s' })));
    await cli.waitForLog(about('model downloading', 'big'), 20_000);
    const staging = async () => (await modelDirEntries()).some((entry) => entry.startsWith('.tmp-'));
    await waitFor(staging, 5000, 'the staging dir of big');
    const exit = await cli.signalAndWait('SIGTERM', 20_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect((await modelDirEntries()).filter((entry) => entry.startsWith('.tmp-'))).toEqual([]);
    await cli.waitForLog('modelsync stopped', 100);
  }, 30_000);

  it('lets a load call in flight finish before exiting 0 on SIGINT', async () => {
    world.server().setLoadDelay(1500);
    world.writeConfig(['a']);
    const cli = startCli(cliArgs(world.flags({ 'shutdown-timeout': '10s' })));
    await cli.waitForLog(about('model loading', 'a'), 20_000);
    const exit = await cli.signalAndWait('SIGINT', 10_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect([...world.server().loaded]).toEqual(['a']);
    expect(cli.logs.some(about('model loaded', 'a'))).toBe(true);
  }, 30_000);

  it('writes the Kubernetes Event of a load that ended during the stop before exiting 0', async () => {
    // An API server slow to take each Event: the one of the load that ends during the stop is still being written.
    const posted: string[] = [];
    storage = await startHttpServer(async (request, response) => {
      const body: Buffer[] = [];
      for await (const chunk of request) body.push(chunk as Buffer);
      await sleep(500);
      // Written only if the agent is still there to hear the answer.
      if (request.socket.destroyed) return;
      const { reason } = JSON.parse(Buffer.concat(body).toString()) as { reason: string };
      posted.push(`${request.method} ${request.url} ${reason}`);
      response.writeHead(201, { 'Content-Type': 'application/json' }).end('{}');
    });
    const kubeconfig = join(tmp.path, 'kubeconfig');
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'events', cluster: { server: storage.url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'modelsync', user: {} }],
        contexts: [{ name: 'test', context: { cluster: 'events', user: 'modelsync' } }],
        'current-context': 'test',
      }),
    );
    world.server().setLoadDelay(1500);
    world.writeConfig(['a']);
    const env = { KUBECONFIG: kubeconfig, POD_NAME: 'serving-0', POD_NAMESPACE: 'serving' };
    const cli = startCli(cliArgs(world.flags({ 'shutdown-timeout': '10s' })), { env });
    await cli.waitForLog(about('model loading', 'a'), 20_000);
    const exit = await cli.signalAndWait('SIGTERM', 10_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(posted).toEqual(['POST /api/v1/namespaces/serving/events ModelLoaded']);
  }, 30_000);

  it('stops at once on a second SIGTERM, aborting a load call still running, and says so at warn', async () => {
    world.server().setLoadDelay(60_000);
    world.writeConfig(['a']);
    // The load and the shutdown timeout are a minute away: an exit within the wait is the second signal's.
    const cli = startCli(cliArgs(world.flags({ 'shutdown-timeout': '60s' })));
    await cli.waitForLog(about('model loading', 'a'), 20_000);
    cli.child.kill('SIGTERM');
    await cli.waitForLog((log) => log.msg.startsWith('shutting down'), 10_000);
    const exit = await cli.signalAndWait('SIGTERM', 15_000);
    expect(exit).toEqual({ code: 0, signal: null });
    // It said "modelsync stopped" at info, as a stop that had let every call finish does.
    expect(cli.logs.filter((log) => log.msg.startsWith('modelsync stopped'))).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'modelsync stopped at once on a second signal: calls still in flight were aborted',
      }),
    ]);
  }, 40_000);

  it('aborts a load call still running at --shutdown-timeout and exits 0 then', async () => {
    world.server().setLoadDelay(20_000);
    world.writeConfig(['a']);
    const cli = startCli(cliArgs(world.flags({ 'shutdown-timeout': '500ms' })));
    await cli.waitForLog(about('model loading', 'a'), 20_000);
    // The load takes 20 s: an exit within the wait is the shutdown timeout's, as its line says.
    const exit = await cli.signalAndWait('SIGTERM', 15_000);
    expect(exit).toEqual({ code: 0, signal: null });
    await cli.waitForLog(
      'modelsync stopped: calls still in flight at the shutdown timeout were aborted',
      100,
    );
  }, 30_000);
});
