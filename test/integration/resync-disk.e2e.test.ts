/**
 * Acceptance (issue #9): the disk check on the real CLI — a model that does not fit fails `no-space` before a
 * byte is written, and one failed by a full disk heals at a resync once space is freed.
 */
import { mkdir, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';
import { diskModes, faultyDisk, type FaultyDisk } from '../hardening/disk/disk-faults';
import { about, resyncWorld, type ResyncWorld } from './resync-world';

const modelBytes = 2 ** 20;

/**
 * A full disk the CLI process sees: a 4 MiB tmpfs filled to 512 KiB free (the model is 1 MiB) where mounting is permitted; elsewhere
 * (the injected faults of disk-faults.ts cannot reach a child process) `--min-free-bytes` set 8 MiB above what a
 * 64 MiB ballast leaves free, so deleting the ballast frees enough, with margins for other writers on the disk.
 */
const fullDisk = async (
  root: string,
): Promise<{ modelDir: string; flags: Record<string, string | number>; fault: FaultyDisk }> => {
  const modelDir = join(root, 'models');
  await mkdir(modelDir);
  if (diskModes().includes('tmpfs'))
    return { modelDir, flags: {}, fault: faultyDisk('tmpfs', modelDir, 4 * 2 ** 20, 512 * 1024) };
  const ballast = join(root, 'ballast');
  await writeFile(ballast, Buffer.alloc(64 * 2 ** 20));
  const { bavail, bsize } = await statfs(modelDir);
  const fault: FaultyDisk = {
    mode: 'injected',
    fill: () => Promise.resolve(),
    free: () => rm(ballast, { force: true }),
    readOnly: () => Promise.resolve(),
    writable: () => Promise.resolve(),
    close: () => undefined,
  };
  return { modelDir, flags: { 'min-free-bytes': bavail * bsize - modelBytes + 8 * 2 ** 20 }, fault };
};

let world: ResyncWorld | undefined;
let disk: FaultyDisk | undefined;
// Declared before the temp dir's hooks, so it runs first: the tmpfs is unmounted before its dir is deleted.
afterEach(async () => {
  await killAllCli();
  disk?.close();
  disk = undefined;
  await world?.close();
});
const tmp = useTempDir('resync-disk');

describe('the disk check (real CLI)', () => {
  it('fails a model that does not fit with a no-space reason, one line, before writing anything', async () => {
    world = await resyncWorld(tmp.path);
    await world.addModel('a', modelBytes);
    world.writeConfig(['a']);
    const cli = startCli(cliArgs(world.flags({ 'min-free-bytes': '8000Ti', 'resync-interval': '0' })));
    const failed = await cli.waitForLog(about('model failed', 'a'), 20_000);
    expect(failed).toMatchObject({ errorKind: 'no-space', phase: 'Failed', level: 'error' });
    expect(String(failed['reason'])).toMatch(
      /does not fit on the model volume: needs .* kept free \(--min-free-bytes\)/,
    );
    expect((await readdir(world.modelDir)).filter((entry) => entry.startsWith('.tmp-'))).toEqual([]);
    expect(world.server().loaded.size).toBe(0);
  }, 30_000);

  it('heals a model failed by a full disk at the next resync once space is freed', async () => {
    const full = await fullDisk(tmp.path);
    disk = full.fault;
    world = await resyncWorld(tmp.path, full.modelDir);
    await world.addModel('a', modelBytes);
    world.writeConfig([]);
    const cli = startCli(cliArgs(world.flags({ ...full.flags, 'resync-interval': '1s' })));
    await cli.waitForLog('start-up sync complete; ready', 20_000);
    await disk.fill();
    world.writeConfig(['a']);
    const failed = await cli.waitForLog(about('model failed', 'a'), 20_000);
    expect(failed['errorKind']).toBe('no-space');
    await disk.free();
    await cli.waitForLog(about('drift: retrying a failed model', 'a'), 10_000);
    await cli.waitForLog(about('model loaded', 'a'), 10_000);
    expect([...world.server().loaded]).toEqual(['a']);
  }, 40_000);
});
