/**
 * Hostile input, the neighbour half: a model server sharing the volume plants links and files in the model dir at
 * exact moments between the loader's steps. Nothing outside the model dir may change, each refusal is a warn line,
 * the stand-in never loads what is not a complete copy of the configured version, and the model converges.
 */
import { cp, lstat, mkdir, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { add, remove } from '../../../src/core/model-op';
import type { ModelSpec } from '../../../src/core/model-config';
import { loadJournalFileName } from '../../../src/edge/load-journal';
import { manifestOf, type ModelManifest } from '../../../src/testing/model-manifest';
import { seededRandom } from '../../../src/testing/seeded-random';
import { name, spec } from '../../helpers/fixtures';
import type { EdgeCall, LoaderHarness, LoaderHarnessOptions } from '../../helpers/loader-harness';
import { harnessesPerTest } from '../../loader/loader-checks';
import { makeFifo, makeSentinel, type Sentinel } from './sentinel';

const warnLevel = 40;

const { created } = harnessesPerTest();

/** A harness whose stand-in checks every load against the manifest of the sources made with `source`. */
const neighbourhood = async (options: LoaderHarnessOptions = {}) => {
  const manifests = new Map<string, ModelManifest>();
  let sources = 0;
  const h = await created({ ...options, manifest: (version) => manifests.get(version) });
  const outside = await makeSentinel(join(h.root, 'outside'));
  /** A local model source whose files the stand-in will demand, and its spec. */
  const model = async (model: string, content = `weights of ${model}`): Promise<ModelSpec> => {
    const uri = await h.source(`${model}-${(sources += 1)}`, content);
    manifests.set(uri, manifestOf(new Map([['model.bin', content]])));
    return spec(uri, '10Mi');
  };
  return { h, outside, model };
};

/** The promise, checked at the end of every test: outside untouched, no load of anything incomplete or foreign. */
const expectPromiseKept = async (h: LoaderHarness, outside: Sentinel): Promise<void> => {
  await outside.expectUntouched();
  const accepted = h.standIn.loads.filter((load) => load.status === 200);
  expect(accepted.filter((load) => !load.complete || load.problem !== undefined)).toEqual([]);
};

/** The warns of the model dir and its journal: one per thing refused or repaired. */
const warnings = (h: LoaderHarness): string[] =>
  h.sink.lines
    .filter(
      (line) => line.level === warnLevel && ['model-dir', 'load-journal'].includes(String(line['component'])),
    )
    .map((line) => line.msg);

/** A neighbourhood whose neighbour runs `plant` once, at the first edge call `when` matches (before that call runs). */
const plantedAt = async (
  when: (call: EdgeCall) => boolean,
  plant: (h: LoaderHarness, outside: Sentinel) => Promise<void>,
  options: LoaderHarnessOptions = {},
) => {
  let armed = true;
  const world = await neighbourhood({
    ...options,
    onCall: async (call) => {
      if (!armed || !when(call)) return;
      armed = false;
      await plant(world.h, world.outside);
    },
  });
  return world;
};

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
  /** One hostile act, aimed at the sentinel dir outside; resolves to the number of entries it replaced. */
  type Act = (h: LoaderHarness, outside: Sentinel, model: string) => Promise<number>;
  const replaceWith = async (path: string, plant: (path: string) => Promise<unknown>): Promise<number> => {
    const there = await lstat(path).then(
      () => 1,
      () => 0,
    );
    await rm(path, { recursive: true, force: true });
    await plant(path);
    return there;
  };
  /** Replaces each entry of the model dir whose name `matches` (only inside a real dir: never through a link). */
  const replaceEach = async (
    dir: string,
    matches: (entry: string) => boolean,
    plant: (path: string) => Promise<unknown>,
  ): Promise<number> => {
    if (!(await lstat(dir).catch(() => undefined))?.isDirectory()) return 0;
    let hits = 0;
    for (const entry of (await readdir(dir).catch(() => [])).filter(matches))
      hits += await replaceWith(join(dir, entry), plant);
    return hits;
  };
  const acts: ReadonlyArray<[string, Act]> = [
    ['model dir -> link to outside', (h, o, m) => replaceWith(join(h.modelDir, m), (p) => symlink(o.dir, p))],
    ['model dir -> file', (h, _, m) => replaceWith(join(h.modelDir, m), (p) => writeFile(p, 'x'))],
    ['model dir -> FIFO', (h, _, m) => replaceWith(join(h.modelDir, m), makeFifo)],
    [
      'marker -> link to a marker outside',
      (h, o, m) =>
        replaceEach(
          join(h.modelDir, m),
          (e) => e.startsWith('SUCCESS.'),
          (p) => symlink(join(o.dir, 'SUCCESS.0000'), p),
        ),
    ],
    [
      'journal -> link to a file outside',
      (h, o) => replaceWith(join(h.modelDir, loadJournalFileName), (p) => symlink(join(o.dir, 'victim'), p)),
    ],
    [
      'journal compaction target -> link outside',
      (h, o) =>
        replaceWith(join(h.modelDir, `${loadJournalFileName}.new`), (p) => symlink(join(o.dir, 'victim'), p)),
    ],
    ...['.tmp-', '.old-'].map((prefix): [string, Act] => [
      `${prefix}* dirs -> links to outside`,
      (h, o) =>
        replaceEach(
          h.modelDir,
          (e) => e.startsWith(prefix),
          (p) => symlink(o.dir, p),
        ),
    ]),
  ];

  it('keeps everything outside intact and converges once the neighbour stops, over 8 seeded rounds of changes', async () => {
    const random = seededRandom(0x6e656967);
    const pick = <T>(items: ReadonlyArray<T>): T => items[Math.floor(random() * items.length)]!;
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    const acted: string[] = [];
    let active = true;
    let neighbour = Promise.resolve();
    let hits = 0;
    const { h, outside, model } = await neighbourhood({
      maxAttempts: 50,
      // One act at a time: two racing acts could aim each other through a link they planted (the test's own race).
      onCall: () => {
        if (!active || random() > 0.5) return;
        const [what, act] = pick(acts);
        const target = pick(names);
        acted.push(`${what} (${target})`);
        neighbour = neighbour.then(async () => {
          hits += await act(h, outside, target);
        });
        return neighbour;
      },
    });
    await h.start();
    const versions = new Map<string, number>();
    const specOf = async (n: string): Promise<ModelSpec> => model(n, `${n} v${versions.get(n) ?? 0}`);
    const wanted = new Map<string, ModelSpec>();
    for (let round = 0; round < 8; round++) {
      for (const n of names) {
        const roll = random();
        if (roll < 0.2 && wanted.has(n)) {
          wanted.delete(n);
          h.push(remove(name(n)));
        } else if (roll < 0.6) {
          versions.set(n, (versions.get(n) ?? 0) + (wanted.has(n) ? 1 : 0));
          wanted.set(n, await specOf(n));
          h.push(add(name(n), wanted.get(n)!));
        }
      }
      await h.waitForIdle(30_000);
      await outside.expectUntouched();
    }
    active = false;
    // Once it stops, a new version of every model: each is installed and loaded afresh, checked by the stand-in.
    for (const n of wanted.keys()) {
      versions.set(n, (versions.get(n) ?? 0) + 1);
      wanted.set(n, await specOf(n));
      h.push(add(name(n), wanted.get(n)!));
    }
    for (const [n, s] of wanted) await h.waitForPhase(n, 'Loaded', s, 30_000);
    await h.waitForIdle(30_000);
    const context = `acts: ${acted.join('; ')}`;
    expect({ context, loaded: [...h.standIn.loaded].sort() }).toEqual({
      context,
      loaded: [...wanted.keys()].sort(),
    });
    await expectPromiseKept(h, outside);
    for (const n of wanted.keys()) expect((await lstat(join(h.modelDir, n))).isDirectory()).toBe(true);
    // Non-vacuity: the neighbour acted often, and often on something that was there.
    expect(acted.length).toBeGreaterThan(40);
    expect(hits).toBeGreaterThan(15);
    expect(warnings(h).length).toBeGreaterThan(0);
  }, 120_000);
});
