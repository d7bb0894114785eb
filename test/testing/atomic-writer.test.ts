/** Tests of the kubelet AtomicWriter emulator and the plain-file writers, on real temp dirs. */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { atomicWrite, removeAllKeys, type AtomicWriteStep } from '../../src/testing/atomic-writer';
import { exists } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

const TS_DIR = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d{1,10}$/;
const TS_DIR_PARTS = /^\.\.(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})\.\d+$/;

const tmp = useTempDir('atomic-writer');
let vol: string;

beforeEach(() => {
  vol = path.join(tmp.path, 'config');
});

const modeOf = async (p: string): Promise<number> => (await fsp.stat(p)).mode & 0o777;
const tsDirs = async (dir: string): Promise<string[]> =>
  (await fsp.readdir(dir)).filter((name) => TS_DIR.test(name)).sort();

/** Everything under `dir` (lstat view): links with targets, files with mode and content, dirs with mode. */
const describeTree = async (dir: string): Promise<Record<string, string>> => {
  const out: Record<string, string> = {};
  const visit = async (rel: string): Promise<void> => {
    for (const name of (await fsp.readdir(path.join(dir, rel))).sort()) {
      const relPath = path.join(rel, name);
      const full = path.join(dir, relPath);
      const st = await fsp.lstat(full);
      if (st.isSymbolicLink()) out[relPath] = `link -> ${await fsp.readlink(full)}`;
      else if (st.isDirectory()) {
        out[relPath] = `dir ${(st.mode & 0o777).toString(8)}`;
        await visit(relPath);
      } else out[relPath] = `file ${(st.mode & 0o777).toString(8)} ${await fsp.readFile(full, 'utf8')}`;
    }
  };
  await visit('');
  return out;
};

/** The errno code `fn` throws with (undefined when it does not throw). */
const errnoOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  }
  return undefined;
};

/** A models.json large enough that a partial read could not pass for a whole one. */
const version = (n: number): string =>
  JSON.stringify({ version: n, models: Array.from({ length: 2000 }, (_, i) => ({ name: `m${i}`, v: n })) });

describe('atomicWrite', () => {
  it('produces the kubelet layout on the first write', async () => {
    const before = Date.now();
    const result = atomicWrite(vol, { 'models.json': '[]' });

    const dataLink = await fsp.readlink(path.join(vol, '..data'));
    expect(dataLink).toMatch(TS_DIR); // relative: a bare sibling name
    expect(result).toEqual({
      changed: true,
      tsDirName: dataLink,
      removedPaths: [],
      createdLinks: ['models.json'],
    });
    expect((await fsp.lstat(path.join(vol, '..data'))).isSymbolicLink()).toBe(true);
    expect(await modeOf(path.join(vol, dataLink))).toBe(0o755);
    expect(await fsp.readlink(path.join(vol, 'models.json'))).toBe('..data/models.json');
    expect(await modeOf(path.join(vol, dataLink, 'models.json'))).toBe(0o644);
    expect(await fsp.readFile(path.join(vol, 'models.json'), 'utf8')).toBe('[]');
    expect((await fsp.readdir(vol)).sort()).toEqual([dataLink, '..data', 'models.json'].sort());

    // The name carries the UTC time of the write.
    const stamp = Date.parse(dataLink.replace(TS_DIR_PARTS, '$1-$2-$3T$4:$5:$6Z'));
    expect(stamp).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(stamp).toBeLessThanOrEqual(Date.now());
  });

  it('applies item modes and defaultMode exactly whatever the umask', async () => {
    const previous = process.umask(0o077);
    try {
      atomicWrite(vol, { a: 'a', b: { data: Buffer.from('b'), mode: 0o600 } }, { defaultMode: 0o444 });
    } finally {
      process.umask(previous);
    }
    expect(await modeOf(path.join(vol, '..data'))).toBe(0o755);
    expect(await modeOf(path.join(vol, 'a'))).toBe(0o444);
    expect(await modeOf(path.join(vol, 'b'))).toBe(0o600);
  });

  it('swaps ..data to a new version and deletes the old one when the content changes', async () => {
    const first = atomicWrite(vol, { 'models.json': 'v1' });
    const linkBefore = await fsp.lstat(path.join(vol, 'models.json'));

    const second = atomicWrite(vol, { 'models.json': 'v2' });

    expect(second.changed).toBe(true);
    expect(second.tsDirName).not.toBe(first.tsDirName);
    expect(second.oldTsDirName).toBe(first.tsDirName);
    expect(second.createdLinks).toEqual([]);
    expect(await fsp.readlink(path.join(vol, '..data'))).toBe(second.tsDirName);
    expect(await exists(path.join(vol, first.tsDirName))).toBe(false);
    expect(await tsDirs(vol)).toEqual([second.tsDirName]);
    expect((await fsp.lstat(path.join(vol, 'models.json'))).ino).toBe(linkBefore.ino); // the link is kept
    expect(await fsp.readFile(path.join(vol, 'models.json'), 'utf8')).toBe('v2');
  });

  it('writes no new version when the content is identical, even with another mode', async () => {
    const first = atomicWrite(vol, { 'models.json': 'same' });
    const tree = await describeTree(vol);
    const steps: AtomicWriteStep[] = [];

    const again = atomicWrite(
      vol,
      { 'models.json': { data: 'same', mode: 0o600 } },
      { onStep: (s) => steps.push(s) },
    );

    expect(again).toEqual({ changed: false, tsDirName: first.tsDirName, removedPaths: [], createdLinks: [] });
    expect(steps).toEqual(['readlink', 'paths-to-remove', 'compare']);
    expect(await describeTree(vol)).toEqual(tree);
  });

  it('re-creates a missing user-visible link when nothing changed', async () => {
    const first = atomicWrite(vol, { 'models.json': 'same' });
    await fsp.unlink(path.join(vol, 'models.json'));

    const again = atomicWrite(vol, { 'models.json': 'same' });

    expect(again).toEqual({
      changed: false,
      tsDirName: first.tsDirName,
      removedPaths: [],
      createdLinks: ['models.json'],
    });
    expect(await fsp.readFile(path.join(vol, 'models.json'), 'utf8')).toBe('same');
  });

  it('unlinks the top-level link of a removed key', async () => {
    atomicWrite(vol, { 'models.json': 'm', 'extra.conf': 'e' });

    const result = atomicWrite(vol, { 'models.json': 'm' });

    expect(result.changed).toBe(true); // same bytes, but something must be removed
    expect(result.removedPaths).toEqual(['extra.conf']);
    expect(await exists(path.join(vol, 'extra.conf'))).toBe(false);
    expect((await fsp.readdir(vol)).sort()).toEqual([result.tsDirName, '..data', 'models.json'].sort());
  });

  it('leaves an empty version and no user-visible entry when every key is removed', async () => {
    atomicWrite(vol, { 'models.json': 'm', 'sub/file': 's' });

    const result = removeAllKeys(vol);

    expect(result.removedPaths).toEqual(['models.json', 'sub']);
    expect((await fsp.readdir(vol)).sort()).toEqual([result.tsDirName, '..data'].sort());
    expect(await fsp.readdir(path.join(vol, '..data'))).toEqual([]);
  });

  it('creates one link for the first element of nested keys and cleans keys', async () => {
    const result = atomicWrite(vol, { 'sub/dir/file': 'f', 'sub//other': 'o', './top': 't' });

    expect(result.createdLinks).toEqual(['sub', 'top']);
    expect(await fsp.readlink(path.join(vol, 'sub'))).toBe('..data/sub');
    expect(await fsp.readlink(path.join(vol, 'top'))).toBe('..data/top');
    expect(await fsp.readFile(path.join(vol, 'sub/dir/file'), 'utf8')).toBe('f');
    expect(await fsp.readFile(path.join(vol, 'sub/other'), 'utf8')).toBe('o');
    expect((await fsp.lstat(path.join(vol, '..data', 'sub', 'dir'))).isDirectory()).toBe(true);
    expect(await exists(path.join(vol, 'dir'))).toBe(false);

    // Dropping one nested key keeps the shared link; dropping the last one unlinks it.
    const dropped = atomicWrite(vol, { 'sub/other': 'o', top: 't' });
    expect(dropped.removedPaths).toEqual([]);
    expect(await exists(path.join(vol, 'sub/dir'))).toBe(false);
    expect(await fsp.readFile(path.join(vol, 'sub/other'), 'utf8')).toBe('o');
    expect(atomicWrite(vol, { top: 't' }).removedPaths).toEqual(['sub']);
    expect(await exists(path.join(vol, 'sub'))).toBe(false);
  });

  it.each([
    ['a first element starting with ..', '..x'],
    ['a reserved name', '..data'],
    ['..', '..'],
    ['a .. element', 'a/../b'],
    ['an empty key', ''],
    ['an absolute path', '/etc/passwd'],
    ['a key that cleans to a reserved name', './..data'],
    ['an element over 255 bytes', 'x'.repeat(256)],
    ['a path over 4096 bytes', `${'d/'.repeat(2048)}f`],
  ])('throws and leaves the volume untouched for %s', async (_label, key) => {
    atomicWrite(vol, { 'models.json': 'v1' });
    const tree = await describeTree(vol);

    expect(() => atomicWrite(vol, { 'models.json': 'v2', [key]: 'bad' })).toThrow(/invalid path/);
    expect(await describeTree(vol)).toEqual(tree);
  });

  it('throws before creating the volume when a key is invalid', async () => {
    expect(() => atomicWrite(vol, { '../escape': 'x' })).toThrow(/invalid path/);
    expect(await exists(vol)).toBe(false);
  });

  it('throws for two keys that clean to the same path and for an out-of-range mode', () => {
    expect(() => atomicWrite(vol, { a: '1', './a': '2' })).toThrow(/more than one key/);
    expect(() => atomicWrite(vol, { a: { data: '1', mode: 0o1777 } })).toThrow(/invalid mode/);
  });

  it('keeps ..data resolving to one whole version after every step', () => {
    const v1 = version(1);
    const v2 = version(2);
    const v3 = version(3);
    const seen: Array<[AtomicWriteStep, string]> = [];
    const check =
      (allowed: string[]) =>
      (step: AtomicWriteStep): void => {
        for (const file of ['..data/models.json', 'models.json']) {
          const text = fs.readFileSync(path.join(vol, file), 'utf8');
          expect(allowed).toContain(text);
          expect((JSON.parse(text) as { models: unknown[] }).models).toHaveLength(2000);
          seen.push([step, text === v1 ? 'v1' : text === v2 ? 'v2' : 'v3']);
        }
      };
    atomicWrite(vol, { 'models.json': v1 });

    atomicWrite(vol, { 'models.json': v2 }, { onStep: check([v1, v2]) });
    atomicWrite(vol, { 'models.json': v3 }, { onStep: check([v2, v3]) });

    const stepsOf = (from: number): string[] => seen.slice(from, from + 18).map(([s, v]) => `${s}:${v}`);
    const expected = (old: string, next: string): string[] =>
      [
        `readlink:${old}`,
        `paths-to-remove:${old}`,
        `compare:${old}`,
        `mkdir-ts:${old}`,
        `chmod-ts:${old}`,
        `write:${old}`,
        `symlink-tmp:${old}`,
        `rename:${next}`,
        `rmdir-old-ts:${next}`,
      ].flatMap((s) => [s, s]); // one entry per file read
    expect(stepsOf(0)).toEqual(expected('v1', 'v2'));
    expect(stepsOf(18)).toEqual(expected('v2', 'v3'));
  });

  it('serves a newly added key through ..data before its user-visible link exists', () => {
    atomicWrite(vol, { 'other.json': 'o' });
    const reads: string[] = [];

    atomicWrite(
      vol,
      { 'other.json': 'o', 'models.json': 'm' },
      {
        onStep: (step) => {
          if (step !== 'rename') return;
          reads.push(fs.readFileSync(path.join(vol, '..data/models.json'), 'utf8'));
          reads.push(fs.existsSync(path.join(vol, 'models.json')) ? 'visible' : 'ENOENT');
        },
      },
    );

    expect(reads).toEqual(['m', 'ENOENT']);
  });

  it('leaves exactly one timestamped dir after 200 writes', async () => {
    for (let i = 0; i < 200; i++) {
      expect(atomicWrite(vol, { 'models.json': `v${i}` }).changed).toBe(true);
    }
    const names = (await fsp.readdir(vol)).sort();
    expect(names).toHaveLength(3);
    expect(names).toEqual(expect.arrayContaining(['..data', 'models.json']));
    expect(await tsDirs(vol)).toEqual([await fsp.readlink(path.join(vol, '..data'))]);
    expect(await fsp.readFile(path.join(vol, 'models.json'), 'utf8')).toBe('v199');
  });

  it('rolls back the new version when a stale ..data_tmp blocks the swap', async () => {
    atomicWrite(vol, { 'models.json': 'v1' });
    await fsp.symlink('..nowhere', path.join(vol, '..data_tmp')); // left by a crash
    const tree = await describeTree(vol);

    expect(errnoOf(() => atomicWrite(vol, { 'models.json': 'v2' }))).toBe('EEXIST');

    expect(await describeTree(vol)).toEqual(tree);
    expect(await fsp.readFile(path.join(vol, 'models.json'), 'utf8')).toBe('v1');
  });

  it('emulates a crash when onStep throws: nothing is rolled back', async () => {
    const first = atomicWrite(vol, { 'models.json': 'v1' });
    const crash = (step: AtomicWriteStep): void => {
      if (step === 'symlink-tmp') throw new Error('kubelet killed');
    };

    expect(() => atomicWrite(vol, { 'models.json': 'v2' }, { onStep: crash })).toThrow('kubelet killed');

    expect(await exists(path.join(vol, '..data_tmp'))).toBe(true);
    expect(await tsDirs(vol)).toHaveLength(2); // the orphan new version stays
    expect(await fsp.readlink(path.join(vol, '..data'))).toBe(first.tsDirName);
    expect(errnoOf(() => atomicWrite(vol, { 'models.json': 'v3' }))).toBe('EEXIST');
  });

  it('throws EINVAL when ..data is not a symlink', async () => {
    await fsp.mkdir(path.join(vol, '..data'), { recursive: true });

    expect(errnoOf(() => atomicWrite(vol, { 'models.json': 'v1' }))).toBe('EINVAL');
    expect(await fsp.readdir(vol)).toEqual(['..data']);
  });

  it('throws ENOENT for a missing volume when create is false', async () => {
    expect(errnoOf(() => atomicWrite(vol, { 'models.json': 'v1' }, { create: false }))).toBe('ENOENT');
    expect(await exists(vol)).toBe(false);
  });

  it('runs setPerms on the new version before publication', () => {
    const calls: string[] = [];
    const result = atomicWrite(
      vol,
      { 'models.json': 'v1' },
      { setPerms: (ts) => calls.push(`${ts} published=${fs.existsSync(path.join(vol, '..data'))}`) },
    );
    expect(calls).toEqual([`${result.tsDirName} published=false`]);
  });
});
