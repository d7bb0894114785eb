/** A neighbour acting at seeded random moments: before edge calls it replaces model dirs, markers, the journal, staging and aside dirs with links to a sentinel dir outside, files and FIFOs. */
import { lstat, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSpec } from '../../../src/core/model-config';
import { add, remove } from '../../../src/core/model-op';
import { loadJournalFileName } from '../../../src/model-dir/load-journal';
import { seededRandom } from '../../../src/testing/seeded-random';
import { name } from '../../helpers/fixtures';
import type { LoaderHarness, LoaderHarnessOptions } from '../../helpers/loader-harness';
import { expectPromiseKept, warnings, type Neighbourhood } from './neighbourhood';
import { makeFifo, type Sentinel } from './sentinel';

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

/**
 * An act that lost its race with the loader: the path made again (a file, or a dir the loader renamed in between the
 * neighbour's remove and its write), its dir removed or replaced, or a file written into a dir while it was removed,
 * between the neighbour's steps (mkfifo's own words, as it is a process). A miss, not a failure of the test.
 */
const lostTheRace = (error: unknown): boolean =>
  ['EEXIST', 'EISDIR', 'ENOENT', 'ENOTEMPTY', 'ENOTDIR'].includes(
    String((error as NodeJS.ErrnoException).code),
  ) || /File exists|Is a directory|No such file|Not a directory/.test(String((error as Error).message));

/** The neighbour's acts, and acts on something that was there, a run must exceed to mean something. */
const [minActs, minHits] = [40, 15];

/**
 * `rounds` rounds (more while the neighbour did too little) of random adds, changes and removes of 10 models while the neighbour acts before about half the
 * edge calls; then it stops and every model gets a new version. Asserts after each round that nothing outside
 * changed, and at the end that the loaded set is the config, each model dir real, and no load was of anything the
 * stand-in's manifest check refused.
 */
export const runRandomNeighbour = async (
  neighbourhood: (options: LoaderHarnessOptions) => Promise<Neighbourhood>,
  { seed, rounds }: { readonly seed: number; readonly rounds: number },
): Promise<void> => {
  const random = seededRandom(seed);
  const pick = <T>(items: ReadonlyArray<T>): T => items[Math.floor(random() * items.length)]!;
  const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
  const acted: string[] = [];
  let active = true;
  let neighbour = Promise.resolve();
  let hits = 0;
  const actFailures: string[] = [];
  const { h, outside, model } = await neighbourhood({
    maxAttempts: 50,
    // One act at a time: two racing acts could aim each other through a link they planted (the test's own race).
    onCall: () => {
      if (!active || random() > 0.5) return;
      const [what, act] = pick(acts);
      const target = pick(names);
      acted.push(`${what} (${target})`);
      // A failed act must not fail the edge calls after it (they wait on the chain): a lost race is a miss.
      neighbour = neighbour.then(async () => {
        hits += await act(h, outside, target).catch((error: unknown) => {
          if (!lostTheRace(error)) actFailures.push(`${what} (${target}): ${String(error)}`);
          return 0;
        });
      });
      return neighbour;
    },
  });
  await h.start();
  const versions = new Map<string, number>();
  const specOf = async (n: string): Promise<ModelSpec> => model(n, `${n} v${versions.get(n) ?? 0}`);
  const wanted = new Map<string, ModelSpec>();
  // `rounds` at least; more, up to four times as many, while the neighbour has not yet acted and hit enough for the
  // checks below to mean something (how often a target is there when it acts depends on the host's speed).
  const enough = (): boolean => acted.length > minActs && hits > minHits;
  for (let round = 0; round < rounds || (!enough() && round < 4 * rounds); round++) {
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
  expect(actFailures).toEqual([]);
  // Non-vacuity: the neighbour acted often, and often on something that was there.
  expect(acted.length).toBeGreaterThan(minActs);
  expect(hits).toBeGreaterThan(minHits);
  expect(warnings(h).length).toBeGreaterThan(0);
};
