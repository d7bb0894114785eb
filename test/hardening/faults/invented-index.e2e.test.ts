/**
 * On the real process: a model server whose index lists 20,000 invented READY names, answering every unload at
 * once, draws at most `--max-unlisted-unloads` unload calls at start-up and at each resync, never delays the
 * configured models' loads, and a set of real names still converges over the resyncs that follow.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../../src/testing/wait';
import { cliArgs, killAllCli, startCli, type CliFlags, type CliProcess } from '../../helpers/cli-process';
import { writeFiles } from '../../helpers/file-tree';
import { modelsJson } from '../../helpers/kube-api';
import type { LogLine } from '../../helpers/log-sink';
import { useTempDir } from '../../helpers/temp-dir';

let standIn: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await killAllCli();
  await standIn?.close();
  standIn = undefined;
});
const tmp = useTempDir('invented-index');

const configured = ['wanted-a', 'wanted-b'];
const invented = (count: number): string[] =>
  Array.from({ length: count }, (_, i) => `invented-${String(i).padStart(5, '0')}`);

/** The agent against a stand-in that lists `names` loaded (nothing of them on disk), the two configured models listed. */
const startWorld = async (
  names: ReadonlyArray<string>,
  flags: CliFlags,
  setup: (server: V2ModelServerStandIn) => void = () => undefined,
): Promise<CliProcess> => {
  const storage = join(tmp.path, 'pvc');
  const modelDir = join(tmp.path, 'models');
  const configDir = join(tmp.path, 'config');
  mkdirSync(modelDir);
  await writeFiles(storage, Object.fromEntries(configured.map((name) => [`${name}/model.bin`, name])));
  atomicWrite(configDir, { 'models.json': modelsJson(storage, configured) });
  standIn = await startV2ModelServer({ modelDir });
  standIn.preload(...names);
  setup(standIn);
  return startCli(
    cliArgs({
      'config-dir': configDir,
      'model-dir': modelDir,
      'server-url': standIn.url,
      'local-storage-roots': storage,
      ...flags,
    }),
  );
};

const unloadCalls = (): string[] =>
  standIn!.requests.filter((request) => request.path.endsWith('/unload')).map((request) => request.name!);

/** The warn line of a start or a resync counting the unloads it left to a later resync. */
const isDeferredLine = (line: LogLine): boolean =>
  typeof line['deferred'] === 'number' && line.msg.includes('the rest wait for');

describe('the agent process against a server listing 20,000 invented READY names', () => {
  it('sends at most --max-unlisted-unloads unloads before the first resync and as many per resync after it, and loads the configured models', async () => {
    const cap = 40;
    // No resync timer: the first resync period lasts until SIGHUP, however slow the machine.
    const agent = await startWorld(invented(20_000), { 'max-unlisted-unloads': cap, 'resync-interval': 0 });
    await agent.waitForLog('start-up sync complete; ready', 60_000);
    await agent.waitForQuiet(500, 10_000);
    expect([...standIn!.loaded].filter((name) => configured.includes(name)).sort()).toEqual(configured);
    const atStart = unloadCalls();
    expect(atStart.length).toBeLessThanOrEqual(cap);
    expect(new Set(atStart).size).toBe(cap); // the documented start-up unloads, bounded: not none
    expect(atStart.some((name) => configured.includes(name))).toBe(false);
    const startWarnings = agent.logs.filter(isDeferredLine);
    expect(startWarnings).toHaveLength(1); // reported once, with the count
    expect(startWarnings[0]).toMatchObject({ deferred: 20_000 - cap });

    agent.child.kill('SIGHUP');
    await waitFor(() => agent.logs.filter(isDeferredLine).length === 2, 10_000, "the resync's deferred line");
    await waitFor(() => unloadCalls().length >= 2 * cap, 10_000, "the resync's unloads");
    await sleep(300);
    expect(unloadCalls().length).toBeLessThanOrEqual(2 * cap);
    expect(agent.logs.filter(isDeferredLine)[1]).toMatchObject({ deferred: 20_000 - 2 * cap });
  }, 90_000);

  it('sends at most --max-unlisted-unloads unloads per resync, retries included, when the server refuses every unload', async () => {
    const cap = 30;
    const agent = await startWorld(
      invented(2_000),
      { 'max-unlisted-unloads': cap, 'resync-interval': 0, 'max-attempts': 1 },
      (server) => server.injectFault('unload', { status: 400, body: '{"error":"no"}' }, Infinity),
    );
    await agent.waitForLog('start-up sync complete; ready', 60_000);
    await agent.waitForQuiet(500, 10_000);
    expect(unloadCalls().length).toBeLessThanOrEqual(cap);
    for (let resync = 1; resync <= 3; resync++) {
      const before = unloadCalls().length;
      agent.child.kill('SIGHUP');
      await waitFor(
        () => agent.logs.filter(isDeferredLine).length === resync + 1,
        10_000,
        `the deferred line of resync ${resync}`,
      );
      await agent.waitForQuiet(500, 10_000);
      // The failed unloads retried and the new ones together stay within the cap.
      expect(unloadCalls().length - before).toBeLessThanOrEqual(cap);
    }
  }, 90_000);

  it('unloads every name over the resyncs that follow when the names are real', async () => {
    const names = invented(130);
    const agent = await startWorld(names, { 'max-unlisted-unloads': 50, 'resync-interval': '1s' });
    await agent.waitForLog('start-up sync complete; ready', 30_000);
    await waitFor(
      () => [...standIn!.loaded].sort().join() === configured.join(),
      30_000,
      'only the configured models loaded',
    );
    expect(new Set(unloadCalls())).toEqual(new Set(names));
    expect(agent.logs.filter(isDeferredLine)[0]).toMatchObject({ deferred: 80 });
  }, 60_000);
});
