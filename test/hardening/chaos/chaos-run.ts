/** The chaos scenario: the real agent killed with SIGKILL at seeded random moments of a 100-model sync whose config keeps changing. */
import { join } from 'node:path';
import { seededRandom } from '../../../src/testing/seeded-random';
import { sleep } from '../../../src/testing/wait';
import { cliArgs, startCli, type CliProcess } from '../../helpers/cli-process';
import {
  crashWorld,
  expectModelDirToHold,
  modelCatalog,
  readModelDir,
  servedVersions,
  type CrashWorld,
  type ModelEntry,
} from './crash-kit';

/** How hard to shake it. */
export interface ChaosOptions {
  readonly seed: number;
  /** Runs that are killed; one more runs to the end. */
  readonly rounds: number;
  /** Models in the first config; later ones add up to a fifth more, remove and change some. */
  readonly models: number;
  /** The temp dir the world lives in. */
  readonly root: string;
  /** Where the world is kept, so `afterEach` can close it whatever happens (see useCrashWorlds). */
  readonly keep: (world: CrashWorld) => CrashWorld;
}

const between = (random: () => number, min: number, max: number): number =>
  min + Math.floor(random() * (max - min + 1));

/**
 * The next config: each model present is removed (10 %) or changed to a new version (15 %); each absent one comes
 * (back) at a new version (40 %). Versions only move forward, so a version once complete on disk is never wanted
 * again after it is replaced: any later download of it is a re-download.
 */
const nextConfig = (
  random: () => number,
  names: ReadonlyArray<string>,
  current: ReadonlyMap<string, number>,
  latest: Map<string, number>,
): Map<string, number> => {
  const next = new Map<string, number>();
  const bump = (name: string): number => {
    latest.set(name, (latest.get(name) ?? 0) + 1);
    return latest.get(name)!;
  };
  for (const name of names) {
    const roll = random();
    const version = current.get(name);
    if (version === undefined) {
      if (roll < 0.4) next.set(name, bump(name));
    } else if (roll >= 0.1) next.set(name, roll < 0.25 ? bump(name) : version);
  }
  return next;
};

/**
 * Runs the scenario and asserts the promise at the end: the loaded set equals the config, each model served at its
 * configured version, no load ever saw an incomplete or wrong version (the stand-in checks each against the
 * manifest), the model dir holds exactly the config, nothing complete on disk was downloaded again, and no run
 * crashed on its own.
 */
export const runChaos = async ({ seed, rounds, models, root, keep }: ChaosOptions): Promise<void> => {
  const random = seededRandom(seed);
  const universe = Array.from(
    { length: Math.ceil(models * 1.2) },
    (_, i) => `m${String(i).padStart(3, '0')}`,
  );
  const catalog = modelCatalog(join(root, 'scratch'), (name) => universe.indexOf(name), 64 * 1024);
  // 100 downloads, 4 at a time, 150 ms each at least: a sync outlasts the time any run gets before its kill.
  const world = keep(await crashWorld(root, catalog, 150));
  const latest = new Map<string, number>();
  let config = new Map<string, number>(universe.slice(0, models).map((name) => [name, 1]));
  for (const name of config.keys()) latest.set(name, 1);
  const entries = (versions: ReadonlyMap<string, number>): ModelEntry[] =>
    [...versions].map(([name, version]) => world.entry(name, `v${version}`));
  world.writeConfig(entries(config));

  // storageUri path -> the run at whose start that version was complete (marker) on disk.
  const completeAt = new Map<string, Set<number>>();
  const runs: CliProcess[] = [];
  const context: string[] = [`seed ${seed}`];
  let restartsAfterKillMidDownload = 0;
  for (let run = 0; run <= rounds; run++) {
    const onDisk = await readModelDir(world.modelDir);
    if (onDisk.entries.some((entry) => entry.startsWith('.tmp-'))) restartsAfterKillMidDownload++;
    for (const [name, { markers }] of onDisk.models) {
      expect({ name, markers: markers.length }).toEqual({ name, markers: 1 });
      const path = new URL(markers[0]!).pathname;
      completeAt.set(path, (completeAt.get(path) ?? new Set()).add(run));
    }
    world.storage.state.run = run;
    const agent = startCli(cliArgs(world.flags()));
    runs.push(agent);
    if (run === rounds) break;
    // Node needs a second or more to start on a busy machine: count the random time from the first log line.
    await agent.waitForLog(() => true, 30_000);
    const killAfterMs = between(random, 100, 1500);
    const changeAfterMs = random() < 0.6 ? between(random, 0, killAfterMs) : undefined;
    config = nextConfig(random, universe, config, latest);
    context.push(
      `run ${run}: kill at ${killAfterMs} ms, config change ${changeAfterMs ?? 'before the next run'}`,
    );
    if (changeAfterMs !== undefined) {
      await sleep(changeAfterMs);
      world.writeConfig(entries(config));
      await sleep(killAfterMs - changeAfterMs);
    } else await sleep(killAfterMs);
    expect(await agent.signalAndWait('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    if (changeAfterMs === undefined) world.writeConfig(entries(config));
  }

  const final = runs[runs.length - 1]!;
  await final.waitForLog('start-up sync complete; ready', 120_000);
  const why = context.join('; ');
  const wanted = entries(config);
  expect({ why, loaded: [...world.standIn.loaded].sort() }).toEqual({
    why,
    loaded: wanted.map((e) => e.modelName).sort(),
  });
  const served = servedVersions(world.standIn);
  expect({
    why,
    served: Object.fromEntries(wanted.map((e) => [e.modelName, served.get(e.modelName)])),
  }).toEqual({
    why,
    served: Object.fromEntries(wanted.map((e) => [e.modelName, e.modelSpec.storageUri])),
  });
  expect({
    why,
    badLoads: world.standIn.loads.filter((load) => !load.complete || load.problem !== undefined),
  }).toEqual({ why, badLoads: [] });
  await expectModelDirToHold(world.modelDir, wanted, catalog);
  const downloadedAgain = world.storage.gets.filter((get) => completeAt.get(get.path)?.has(get.run) === true);
  expect({ why, downloadedAgain }).toEqual({ why, downloadedAgain: [] });
  expect(final.logs.filter((log) => log.msg === 'model failed')).toEqual([]);
  expect(runs.flatMap((agent) => agent.otherLines)).toEqual([]);
  // Non-vacuity: kills interrupted downloads, and versions were complete on disk at some restart.
  expect(restartsAfterKillMidDownload).toBeGreaterThan(0);
  expect(completeAt.size).toBeGreaterThan(0);
  expect(await final.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
};
