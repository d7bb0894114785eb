/**
 * The conformance scenarios, on the real CLI process beside one server: each one an `it`, the same for every
 * server and for the stand-in playing it (docs/model-servers.md has the table of scenario × server).
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../../src/testing/wait';
import type { FixtureVariant } from '../../real-servers/models';
import type { RealServerKind } from '../../real-servers/servers';
import type { Target } from './targets';
import { world, type World } from './world';

/** How a target is made for a scenario (a real server, or the stand-in playing it). */
export type TargetFactory = (kind: RealServerKind, modelDir: string) => Promise<Target>;

/** What each server says when it rejects a fixture: a piece of its own reason, as /status must show it. */
const rejections: Record<RealServerKind, Record<'bad-config' | 'raise-on-load', string>> = {
  triton: { 'bad-config': 'failed to poll from model repository', 'raise-on-load': 'raise-on-load: boom' },
  mlserver: { 'bad-config': 'not found', 'raise-on-load': 'raise-on-load: boom' },
  kserve: { 'bad-config': 'is not ready', 'raise-on-load': 'raise-on-load: boom' },
};

/** Names that a URL must escape, each one served by that server; and one Triton cannot take (Failed, said why). */
const escapingNames: Record<RealServerKind, ReadonlyArray<string>> = {
  triton: ['a+b', 'x:y'],
  mlserver: ['a+b', 'my model', 'über'],
  kserve: ['a+b', 'my model', 'über'],
};

const loadsOf = (w: World, name: string): number =>
  w.agent().logs.filter((log) => log.msg === 'model loading' && log['model'] === name).length;
const downloadsOf = (w: World, name: string): number =>
  w.agent().logs.filter((log) => log.msg === 'model downloading' && log['model'] === name).length;

/**
 * Restarts the server of `at` (models a and b serving before) and waits for both to be asked to load again (or
 * loaded by the server itself) within one resync (2 s apart; 15 s with the restart), then for both to serve. The repair is judged by when the loads are
 * asked for: the load itself is the server's time (13 s for these two on MLServer at a load average of 17, where
 * serving within 15 s of the restart was a fast machine's promise).
 */
const restartedAndRepaired = async (at: World): Promise<void> => {
  const loadsBefore = [loadsOf(at, 'a'), loadsOf(at, 'b')] as const;
  await at.target.restart();
  const asked = (name: 'a' | 'b', before: number, listed: ReadonlyArray<string>): boolean =>
    loadsOf(at, name) > before || listed.includes(name); // a server may load its model dir itself at start
  await at.until(
    'a and b loaded again, or asked to be, within one resync',
    async () => {
      const listed = await at.target.loaded().catch(() => []);
      return asked('a', loadsBefore[0], listed) && asked('b', loadsBefore[1], listed);
    },
    15_000,
  );
  await at.serving({ a: 1, b: 2 });
};

/** `count` models named `m00`… listed with `variant`. */
const many = (count: number, variant: FixtureVariant): Record<string, FixtureVariant> =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`m${String(i).padStart(2, '0')}`, variant]));

/** Registers every scenario for `kind` on the targets `make` builds. */
export const conformanceScenarios = (kind: RealServerKind, make: TargetFactory): void => {
  let w: World | undefined;
  const open = async (): Promise<World> => (w = await world(kind, make));
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it('add: the model serves an inference request', async () => {
    const at = await open();
    at.configure({ m1: 'v1' });
    await at.startAgent();
    await at.serving({ m1: 1 });
    // The server answers inference once it has loaded; the agent says Loaded once its journal holds the load too.
    await at.until('m1 Loaded', async () => (await at.status('m1'))?.phase === 'Loaded');
    expect((await at.status('m1'))?.phase).toBe('Loaded');
  });

  it('change: the new version serves and the old one is gone, from the server and the model dir', async () => {
    const at = await open();
    at.configure({ m1: 'v1' });
    await at.startAgent();
    await at.serving({ m1: 1 });
    at.configure({ m1: 'v2' });
    await at.serving({ m1: 2 });
    await at.until('the replaced version deleted', () =>
      Promise.resolve(readdirSync(at.target.modelDir).every((entry) => !entry.startsWith('.old-'))),
    );
    expect(await at.target.loaded()).toEqual(['m1']);
  });

  it('remove: unloaded, and its files deleted only once the server has let go of them', async () => {
    const at = await open();
    // On Triton a model whose finalize() takes 2 s: the unload's 200 comes while it is still UNLOADING.
    at.configure({ m1: kind === 'triton' ? 'slow-unload' : 'v1' });
    await at.startAgent();
    await at.serving({ m1: 1 });
    at.configure({});
    const dir = join(at.target.modelDir, 'm1');
    const seen: string[] = [];
    await at.until(
      'the model dir deleted',
      async () => {
        const state = await at.target.state('m1');
        const exists = existsSync(dir);
        seen.push(`${exists ? 'dir' : 'no dir'} ${state}`);
        return !exists;
      },
      30_000,
    );
    expect(seen.filter((sample) => sample.startsWith('no dir') && !sample.endsWith('gone'))).toEqual([]);
    expect(await at.target.state('m1')).toBe('gone');
    await at.until('Removed', async () => (await at.status('m1')) === undefined);
  });

  it("rejected models: Failed with the server's own reason, no endless retries, the others keep serving", async () => {
    const at = await open();
    at.configure({ good: 'v1', bad: 'bad-config', boom: 'raise-on-load' });
    await at.startAgent();
    await at.serving({ good: 1 });
    for (const [name, variant] of [
      ['bad', 'bad-config'],
      ['boom', 'raise-on-load'],
    ] as const) {
      await at.until(`${name} Failed`, async () => (await at.status(name))?.phase === 'Failed');
      expect((await at.status(name))?.error?.reason).toContain(rejections[kind][variant]);
    }
    // Two resyncs later (2 s apart) the final failures were not tried again, and the good model still serves.
    await sleep(4500);
    expect([loadsOf(at, 'bad'), loadsOf(at, 'boom')]).toEqual([1, 1]);
    expect(await at.target.infer('good')).toBe(1);
  });

  it('the server restarted empty, its model dir emptied too: repaired within one resync', async () => {
    const at = await open();
    at.configure({ a: 'v1', b: 'v2' });
    await at.startAgent();
    await at.serving({ a: 1, b: 2 });
    await at.target.stop();
    for (const entry of readdirSync(at.target.modelDir))
      await rm(join(at.target.modelDir, entry), { recursive: true });
    await restartedAndRepaired(at);
  });

  it('the server restarted with the model dir full: reloaded within one resync, nothing downloaded', async () => {
    const at = await open();
    at.configure({ a: 'v1', b: 'v2' });
    await at.startAgent();
    await at.serving({ a: 1, b: 2 });
    await restartedAndRepaired(at);
    expect([downloadsOf(at, 'a'), downloadsOf(at, 'b')]).toEqual([1, 1]);
  });

  it('the agent killed with -9 mid-sync and restarted: nothing complete is downloaded again, it converges', async () => {
    const at = await open();
    const models = many(8, 'v1');
    at.configure(models);
    const first = await at.startAgent({ 'load-concurrency': 1 });
    await first.waitForLog('model loaded', 60_000);
    await first.signalAndWait('SIGKILL');
    const loadedBefore = new Set(
      first.logs.filter((log) => log.msg === 'model loaded').map((log) => String(log['model'])),
    );
    await at.startAgent();
    await at.serving(Object.fromEntries(Object.keys(models).map((name) => [name, 1])));
    for (const name of loadedBefore) expect(downloadsOf(at, name)).toBe(0);
  });

  it('50 models listed at once: every one serves', async () => {
    const at = await open();
    const models = many(50, 'v1');
    at.configure(models);
    await at.startAgent();
    await at.serving(Object.fromEntries(Object.keys(models).map((name) => [name, 1])), 120_000);
  });

  it('model names that need escaping in a URL serve; a name the server cannot take fails, saying why', async () => {
    const at = await open();
    const names = escapingNames[kind];
    at.configure({
      ...Object.fromEntries(names.map((name) => [name, 'v1' as const])),
      ...(kind === 'triton' ? { 'my model': 'v1' as const } : {}),
    });
    await at.startAgent();
    await at.serving(Object.fromEntries(names.map((name) => [name, 1])));
    if (kind === 'triton') {
      await at.until('my model Failed', async () => (await at.status('my model'))?.phase === 'Failed');
      expect((await at.status('my model'))?.error).toMatchObject({ kind: 'refused' });
      expect((await at.status('my model'))?.error?.reason).toContain('Triton takes only');
    }
  });

  it('a model dir holding things that are not models: lost+found, stray files, our own dirs mid-sync', async () => {
    const at = await open();
    await mkdir(join(at.target.modelDir, 'lost+found'));
    await writeFile(join(at.target.modelDir, '.keep'), 'not a model\n');
    await mkdir(join(at.target.modelDir, '.tmp-m9-0a1b2c'));
    at.configure(many(6, 'v1'));
    await at.startAgent();
    await at.serving(Object.fromEntries(Object.keys(many(6, 'v1')).map((name) => [name, 1])));
    at.configure({ ...many(6, 'v2') });
    await at.serving(Object.fromEntries(Object.keys(many(6, 'v2')).map((name) => [name, 2])));
    expect(existsSync(join(at.target.modelDir, 'lost+found'))).toBe(true);
    expect(existsSync(join(at.target.modelDir, '.keep'))).toBe(true);
    expect((await at.target.loaded()).sort()).toEqual(Object.keys(many(6, 'v2')));
  });
};
