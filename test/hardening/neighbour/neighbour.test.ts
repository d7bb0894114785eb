/**
 * Hostile input, the neighbour half: a model server sharing the volume plants links and files in the model dir at
 * exact moments between the loader's steps. Nothing outside the model dir may change, each refusal is a warn line,
 * the stand-in never loads what is not a complete copy of the configured version, and the model converges.
 */
import { cp, lstat, mkdir, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { add, remove } from '../../../src/core/model-op';
import { loadJournalFileName } from '../../../src/model-dir/load-journal';
import { name } from '../../helpers/fixtures';
import { expectPromiseKept, useNeighbourhoods, warnings } from './neighbourhood';
import { runRandomNeighbour } from './random-neighbour';
import { makeFifo } from './sentinel';

const { neighbourhood, plantedAt } = useNeighbourhoods();

describe('the model dir against a hostile neighbour', () => {
  it('never writes through a journal path planted as a symlink to a dir outside (the victim survives)', async () => {
    const { h, outside, model } = await neighbourhood();
    await symlink(outside.dir, join(h.modelDir, '.modelsync-loads'));
    await symlink(outside.dir, join(h.modelDir, loadJournalFileName));
    await h.start();
    const victim = await model('victim');
    h.push(add(name('victim'), victim));
    await h.waitForPhase('victim', 'Loaded', victim);
    await expectPromiseKept(h, outside);
    expect((await lstat(join(h.modelDir, loadJournalFileName))).isFile()).toBe(true);
    expect(warnings(h)).toEqual([
      'not the load journal dir modelsync wrote; removing it',
      'the load journal is not a file modelsync wrote; replacing it',
    ]);
  });

  it('writes the journal anew when it is swapped for a symlink to a file outside between two loads', async () => {
    const { h, outside, model } = await plantedAt(
      (call) => call.step === 'load' && call.model === 'm2',
      async (h, outside) => {
        await rm(join(h.modelDir, loadJournalFileName));
        await symlink(join(outside.dir, 'victim'), join(h.modelDir, loadJournalFileName));
      },
    );
    await h.start();
    const [s1, s2] = [await model('m1'), await model('m2')];
    h.push(add(name('m1'), s1));
    await h.waitForPhase('m1', 'Loaded', s1);
    h.push(add(name('m2'), s2));
    await h.waitForPhase('m2', 'Loaded', s2);
    // The swap came between m2's record and its load: its confirmation finds it and writes the journal anew.
    await expectPromiseKept(h, outside);
    expect(warnings(h)).toEqual([
      'the load journal was replaced or removed by someone else; writing it anew',
    ]);
    expect((await lstat(join(h.modelDir, loadJournalFileName))).isFile()).toBe(true);
    const s3 = await model('m3');
    h.push(remove(name('m1')), add(name('m3'), s3));
    await h.waitForPhase('m3', 'Loaded', s3);
    await expectPromiseKept(h, outside);
  });

  it('installs again, rather than loads, a model dir replaced by a symlink to a complete copy before a reload', async () => {
    const { h, outside, model } = await plantedAt(
      // At the first load call (which the stand-in fails with a 503): the dir becomes a link to a perfect copy.
      (call) => call.step === 'load',
      async (h, outside) => {
        await cp(join(h.modelDir, 'm1'), join(outside.dir, 'copy'), { recursive: true });
        await rename(join(h.modelDir, 'm1'), join(h.root, 'moved-m1'));
        await symlink(join(outside.dir, 'copy'), join(h.modelDir, 'm1'));
      },
    );
    const s1 = await model('m1');
    h.standIn.failNextLoads(1);
    await h.start();
    h.push(add(name('m1'), s1));
    await h.waitForPhase('m1', 'Loaded', s1);
    expect((await lstat(join(h.modelDir, 'm1'))).isDirectory()).toBe(true);
    expect(h.callsOf('m1', ['install'])).toEqual([
      'install:start',
      'install:end',
      'install:start',
      'install:end',
    ]);
    expect(warnings(h)).toEqual([
      'model dir is not as installed; it will be installed again',
      'not a model dir; removing it',
    ]);
    await rm(join(outside.dir, 'copy'), { recursive: true });
    await expectPromiseKept(h, outside);
  });

  it('unlinks, never follows, a model dir replaced by a symlink to outside before its removal', async () => {
    const { h, outside, model } = await neighbourhood();
    await h.start();
    const s1 = await model('m1');
    h.push(add(name('m1'), s1));
    await h.waitForPhase('m1', 'Loaded', s1);
    await rm(join(h.modelDir, 'm1'), { recursive: true });
    await symlink(outside.dir, join(h.modelDir, 'm1'));
    h.push(remove(name('m1')));
    await h.waitForPhase('m1', 'Removed');
    expect(await h.modelDirEntries()).toEqual([]);
    await expectPromiseKept(h, outside);
  });

  it('re-downloads a model whose marker was replaced by a symlink to a marker outside', async () => {
    const { h, outside, model } = await neighbourhood();
    const s1 = await model('m1');
    await h.installOnDisk('m1', s1);
    h.standIn.preload('m1');
    const [marker] = (await readdir(join(h.modelDir, 'm1'))).filter((e) => e.startsWith('SUCCESS.'));
    await rm(join(h.modelDir, 'm1', marker!));
    await symlink(join(outside.dir, 'SUCCESS.0000'), join(h.modelDir, 'm1', marker!));
    await h.start();
    h.push(add(name('m1'), s1));
    await h.waitForPhase('m1', 'Loaded', s1);
    expect(h.callsOf('m1', ['install', 'load'])).toEqual([
      'install:start',
      'install:end',
      'load:start:replacing',
      'load:end',
    ]);
    await expectPromiseKept(h, outside);
  });

  it('recovers without blocking when a FIFO sits where a marker or a model dir should be', async () => {
    const { h, outside, model } = await neighbourhood();
    const [s1, s2] = [await model('m1'), await model('m2')];
    await h.installOnDisk('m1', s1);
    const [marker] = (await readdir(join(h.modelDir, 'm1'))).filter((e) => e.startsWith('SUCCESS.'));
    await rm(join(h.modelDir, 'm1', marker!));
    await makeFifo(join(h.modelDir, 'm1', marker!));
    await makeFifo(join(h.modelDir, 'm2'));
    await h.start();
    h.push(add(name('m1'), s1), add(name('m2'), s2));
    await h.waitForPhase('m1', 'Loaded', s1);
    await h.waitForPhase('m2', 'Loaded', s2);
    expect(warnings(h)).toEqual(['not a model dir; removing it']);
    await expectPromiseKept(h, outside);
  });

  it('never writes through a staging dir swapped for a symlink mid-download, and installs it on the retry', async () => {
    const { h, outside, model } = await plantedAt(
      (call) => call.step === 'download',
      async (h, outside) => {
        const [staging] = (await readdir(h.modelDir)).filter((e) => e.startsWith('.tmp-m1-'));
        await rename(join(h.modelDir, staging!), join(h.root, 'stolen'));
        await symlink(outside.dir, join(h.modelDir, staging!));
      },
    );
    // Names a neighbour might guess: mkdtemp never reuses an existing one.
    for (const guess of ['.tmp-m1-000000', '.tmp-m1-aaaaaa', '.tmp-m1-XXXXXX'])
      await symlink(outside.dir, join(h.modelDir, guess));
    await h.start();
    const s1 = await model('m1');
    h.push(add(name('m1'), s1));
    await h.waitForPhase('m1', 'Loaded', s1);
    expect(h.phases('m1')).toEqual(['Downloading', 'Retrying', 'Downloading', 'Loading', 'Loaded']);
    expect(h.statusOf('m1')?.phase).toBe('Loaded');
    await expectPromiseKept(h, outside);
  });

  it("fails a model named lost+found for good when the file system's lost+found is there, and loads the others", async () => {
    const { h, outside, model } = await neighbourhood();
    await mkdir(join(h.modelDir, 'lost+found'));
    await writeFile(join(h.modelDir, 'lost+found', '#1234'), 'orphan');
    await h.start();
    const [lost, s2] = [await model('lost+found'), await model('m2')];
    h.push(add(name('lost+found'), lost), add(name('m2'), s2));
    await h.waitForPhase('m2', 'Loaded', s2);
    await h.waitForPhase('lost+found', 'Failed');
    expect(h.statusOf('lost+found')).toMatchObject({
      errorKind: 'refused',
      reason: expect.stringContaining("the file system's lost+found") as unknown,
    });
    expect(await readdir(join(h.modelDir, 'lost+found'))).toEqual(['#1234']);
    await expectPromiseKept(h, outside);
  });
});

describe('the model dir against a neighbour acting at random moments', () => {
  it('keeps everything outside intact and converges once the neighbour stops, over 8 seeded rounds of changes', async () => {
    await runRandomNeighbour(neighbourhood, { seed: 0x6e656967, rounds: 8 });
  }, 120_000);
});
