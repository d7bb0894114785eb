/** Tests of the archive guard: each entry's path and link checked in order, and every symlink's real end. */
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { EffectError } from '../../../src/core/errors';
import { checkLinksInside, EntryGuard, type EntryKind } from '../../../src/storage/archive/guard';
import { effectError } from '../../helpers/effect-error';
import { writeFiles } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';

const what = 'GET http://host/m.tar';

/** The refusal `check` throws, or fails the test. */
const refusalOf = (run: () => unknown): EffectError => {
  try {
    run();
  } catch (error) {
    if (error instanceof EffectError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('EntryGuard', () => {
  it.each<[string, EntryKind, string, string]>([
    ['model/1/model.pt', 'file', '', 'model/1/model.pt'],
    ['./model//x.pt', 'file', '', 'model/x.pt'],
    ['model/', 'dir', '', 'model'],
    ['./', 'dir', '', ''],
    ['latest', 'symlink', 'model/1/model.pt', 'latest'],
    ['model/up', 'symlink', '../config.json', 'model/up'],
    ['model/self', 'symlink', '.', 'model/self'],
    ['copy.pt', 'hardlink', 'model/1/model.pt', 'copy.pt'],
    ['win\\dir\\x.pt', 'file', '', 'win/dir/x.pt'],
  ])('lets %j (%s -> %j) in as %j', (name, kind, target, entryPath) => {
    expect(new EntryGuard(what).check(name, kind, target)).toBe(entryPath);
  });

  it('refuses a name of a million characters quoting its first 200 only (a pax path may be megabytes)', () => {
    const name = `dir/${'n'.repeat(1_000_000)}`;
    const error = refusalOf(() => new EntryGuard(what).check(name, 'file', ''));
    expect(error.message).toBe(
      `${what}: refusing archive entry ${JSON.stringify(name.slice(0, 200))}… (1000004 characters): its name is longer than 4096 bytes`,
    );
  });

  it.each<[string, EntryKind, string, string]>([
    ['../evil', 'file', '', "its path contains '..'"],
    ['a/../../evil', 'file', '', "its path contains '..'"],
    ['a\\..\\..\\evil', 'file', '', "its path contains '..'"],
    ['/etc/passwd', 'file', '', 'its path is absolute'],
    ['\\\\server\\share', 'file', '', 'its path is absolute'],
    ['C:/evil', 'file', '', 'its path is absolute'],
    ['nul\0byte', 'file', '', 'its name contains NUL'],
    ['dev', 'other', '', 'it is not a file, directory or link'],
    ['.', 'file', '', 'it would replace the model dir'],
    ['./', 'symlink', 'x', 'it would replace the model dir'],
    ['link', 'symlink', '', 'its link target is empty'],
    ['link', 'symlink', '/etc/passwd', 'it links to the absolute path /etc/passwd'],
    ['link', 'symlink', 'C:\\evil', 'it links to the absolute path C:\\evil'],
    ['link', 'symlink', '../outside', 'it links to ../outside, outside the model dir'],
    ['a/b/link', 'symlink', '../../..', 'it links to ../../.., outside the model dir'],
    ['hard', 'hardlink', '../outside', "its link target is refused: its path contains '..'"],
    ['hard', 'hardlink', '/etc/shadow', 'its link target is refused: its path is absolute'],
    ['hard', 'hardlink', '.', 'it hard-links the model dir'],
  ])('refuses %j (%s -> %j): %s', (name, kind, target, why) => {
    const error = refusalOf(() => new EntryGuard(what).check(name, kind, target));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toBe(`${what}: refusing archive entry ${JSON.stringify(name)}: ${why}`);
  });

  it('refuses any later entry written through a symlink it let in', () => {
    const guard = new EntryGuard(what);
    guard.check('l', 'symlink', '.');
    guard.check('m', 'file');
    for (const [name, kind] of [
      ['l/x', 'file'],
      ['l', 'file'],
      ['l/sub/', 'dir'],
    ] as const) {
      expect(refusalOf(() => guard.check(name, kind)).message).toContain(
        'it would be written through the symlink l',
      );
    }
  });

  it('refuses a hard link through a symlink it let in', () => {
    const guard = new EntryGuard(what);
    guard.check('dir/l', 'symlink', '..');
    expect(refusalOf(() => guard.check('h', 'hardlink', 'dir/l/x')).message).toContain(
      'it hard-links through the symlink dir/l/x',
    );
    expect(refusalOf(() => guard.check('h2', 'hardlink', 'dir/l')).message).toContain('hard-links through');
  });

  it('refuses a second entry at a path it let in, unless both are directories', () => {
    const guard = new EntryGuard(what);
    guard.check('model.pt', 'file');
    guard.check('dir/', 'dir');
    expect(guard.check('./dir', 'dir')).toBe('dir');
    for (const [name, kind] of [
      ['./model.pt', 'file'],
      ['model.pt', 'hardlink'],
      ['dir', 'file'],
      ['model.pt/', 'dir'],
    ] as const) {
      const error = refusalOf(() => guard.check(name, kind, 'dir'));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(error.message).toBe(`${what}: invalid archive: entry ${JSON.stringify(name)} appears twice`);
    }
  });

  it('refuses a name longer than a path, or with a part longer than a file name, may be', () => {
    const guard = new EntryGuard(what);
    expect(guard.check(`${'a'.repeat(255)}/b`, 'file')).toBe(`${'a'.repeat(255)}/b`);
    expect(refusalOf(() => guard.check(`${'a/'.repeat(2049)}x`, 'file')).message).toContain(
      ': its name is longer than 4096 bytes',
    );
    expect(refusalOf(() => guard.check(`d/${'é'.repeat(128)}`, 'file')).message).toContain(
      ': a part of its name is longer than 255 bytes',
    );
    expect(refusalOf(() => guard.check('h', 'hardlink', 'x'.repeat(256))).message).toContain(
      'its link target is refused: a part of its name is longer than 255 bytes',
    );
  });

  it('keeps the symlinks of one archive apart from another', () => {
    new EntryGuard(what).check('l', 'symlink', '.');
    expect(new EntryGuard(what).check('l/x', 'file')).toBe('l/x');
  });

  it('checks an entry 2,000 dirs deep in one walk down its path, not one per dir above it', () => {
    // An entry's name may be 4 KiB: each dir above it was built and looked up anew among the symlinks, 80 ms of
    // CPU an entry at this depth, 13 minutes for the 10,000 entries --max-archive-entries lets in (these 500: 40 s).
    const guard = new EntryGuard(what);
    const deep = Array.from({ length: 2000 }, (_, i) => `${i % 10}`).join('/');
    guard.check(`${deep.slice(0, 39)}/link`, 'symlink', '.');
    // Synchronous: no test timeout can end it, so its time is checked after it.
    const started = performance.now();
    for (let i = 0; i < 500; i++) guard.check(`${deep}/f${i}`, 'file');
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(refusalOf(() => guard.check(`${deep.slice(0, 39)}/link/${deep}`, 'file')).message).toContain(
      `it would be written through the symlink ${deep.slice(0, 39)}/link`,
    );
  });
});

describe('checkLinksInside', () => {
  const tmp = useTempDir('guard');
  let dir: string;

  beforeEach(async () => {
    dir = path.join(tmp.path, 'model');
    await writeFiles(dir, { 'sub/model.pt': 'w' });
  });

  it('accepts links that stay inside, chains and dangling ones included', async () => {
    await symlink('sub/model.pt', path.join(dir, 'latest'));
    await symlink('../latest', path.join(dir, 'sub', 'up'));
    await symlink('.', path.join(dir, 'self'));
    await symlink('self/self/sub/../latest', path.join(dir, 'chain'));
    await symlink('not-there-yet', path.join(dir, 'dangling'));
    await expect(checkLinksInside(dir, what)).resolves.toBeUndefined();
  });

  it.each([
    ['a chain of links that are each inside', { a: '.', b: 'a/..' }, 'b'],
    ['a link into a link that leads out', { a: 'sub/..', 'sub/out': '../a/..' }, 'sub/out'],
    ['an absolute link', { abs: '/etc' }, 'abs'],
    ['a link to a sibling of the dir', { sib: '../model-other' }, 'sib'],
  ])('refuses %s', async (_label, links: Record<string, string>, shown) => {
    for (const [at, target] of Object.entries(links)) await symlink(target, path.join(dir, at));
    const error = await effectError(checkLinksInside(dir, what));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toBe(
      `${what}: refusing archive entry ${JSON.stringify(shown)}: it leads outside the model dir`,
    );
  });

  it('refuses a loop of links, naming one of them', async () => {
    await symlink('b', path.join(dir, 'a'));
    await symlink('a', path.join(dir, 'b'));
    const error = await effectError(checkLinksInside(dir, what));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toMatch(/refusing archive entry "[ab]": too many levels of symlinks/);
  });

  it('accepts a dir whose name merely starts with two dots', async () => {
    await mkdir(path.join(dir, '..hidden'));
    await symlink('..hidden', path.join(dir, 'to-hidden'));
    await expect(checkLinksInside(dir, what)).resolves.toBeUndefined();
  });
});
