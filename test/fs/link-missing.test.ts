import { lstat, mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { linkMissing } from '../../src/fs/link-missing';
import { listTree } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

describe('linkMissing', () => {
  const tmp = useTempDir('link-missing');

  it("links what `into` lacks: files hard-linked, dirs made, links made again as links; `into`'s own entries stay", async () => {
    const from = join(tmp.path, 'from');
    const into = join(tmp.path, 'into');
    await mkdir(join(from, 'a', 'b'), { recursive: true });
    await mkdir(join(into, 'a'), { recursive: true });
    await writeFile(join(tmp.path, 'outside.txt'), 'not to be followed');
    await writeFile(join(from, 'a', 'b', 'weights.bin'), 'weights');
    await writeFile(join(from, 'a', 'shared.txt'), 'from');
    await writeFile(join(into, 'a', 'shared.txt'), 'into');
    await symlink(join(tmp.path, 'outside.txt'), join(from, 'a', 'out'));

    await linkMissing(from, into);

    expect(await listTree(into)).toEqual([
      'a/',
      'a/b/',
      'a/b/weights.bin',
      `a/out -> ${join(tmp.path, 'outside.txt')}`,
      'a/shared.txt',
    ]);
    expect(await readFile(join(into, 'a', 'shared.txt'), 'utf8')).toBe('into');
    expect((await stat(join(into, 'a', 'b', 'weights.bin'))).ino).toBe(
      (await stat(join(from, 'a', 'b', 'weights.bin'))).ino,
    );
    expect((await lstat(join(into, 'a', 'out'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(into, 'a', 'out'))).toBe(join(tmp.path, 'outside.txt'));
  });
});
