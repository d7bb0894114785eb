/** makeDirs: `mkdir -p` whose failure names the errno that stopped it, on a real read-only tmpfs where mounting is permitted. */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { makeDirs } from '../../src/fs';
import { modelDirStore } from '../../src/model-dir/store';
import { diskModes, faultyDisk, type FaultyDisk } from '../hardening/disk/disk-faults';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('make-dirs');
// Node's own recursive mkdir is what is wrong (it says ENOENT for EROFS): only a real read-only file system shows it.
const onTmpfs = diskModes().includes('tmpfs') ? it : it.skip;

describe('makeDirs', () => {
  let disk: FaultyDisk | undefined;
  afterEach(() => {
    disk?.close();
    disk = undefined;
  });
  const readOnlyDir = async (): Promise<string> => {
    const dir = join(tmp.path, 'volume');
    await mkdir(dir);
    disk = faultyDisk('tmpfs', dir, 1024 * 1024, 512 * 1024);
    await disk.readOnly();
    return dir;
  };

  it('makes the dir and its parents, and does nothing when they are there', async () => {
    const dir = join(tmp.path, 'a', 'b', 'c');
    await makeDirs(dir);
    await makeDirs(dir);
    expect((await stat(dir)).isDirectory()).toBe(true);
  });

  onTmpfs('names EROFS, not ENOENT, for a dir missing on a read-only volume, however deep', async () => {
    const volume = await readOnlyDir();
    for (const dir of [join(volume, 'models'), join(volume, 'a', 'b')])
      await expect(makeDirs(dir)).rejects.toMatchObject({ code: 'EROFS' });
  });

  onTmpfs(
    'stops the agent on a model dir missing on a read-only volume with a line naming EROFS',
    async () => {
      const root = join(await readOnlyDir(), 'models');
      const store = modelDirStore({ root, log: pino({ level: 'silent' }) });
      const recovering = store.recover();
      await expect(recovering).rejects.toMatchObject({ kind: 'filesystem', retryable: false });
      await expect(recovering).rejects.toThrow(`cannot create ${root}: EROFS`);
    },
  );
});
