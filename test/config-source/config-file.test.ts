/** readConfigFile on real dirs: through ..data, only regular files, bounded in size, bytes checked as UTF-8. */
import { execFileSync } from 'node:child_process';
import { mkdir, open, symlink, truncate, writeFile, type FileHandle } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { readConfigFile } from '../../src/config-source/config-file';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { withTimeout } from '../../src/testing/wait';
import { tempDir, removeTempDir, useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('config-file');

/** The read, which must come back within two seconds (the old reader blocked forever on a FIFO). */
const read = (dir: string, options?: Parameters<typeof readConfigFile>[1]) =>
  withTimeout(readConfigFile(dir, options), 10_000, 'the read of models.json');

const failureOf = async (dir: string, options?: Parameters<typeof readConfigFile>[1]) => {
  const result = await read(dir, options);
  if (result._tag === 'Right') throw new Error(`expected the read to fail, got ${result.right.text}`);
  return result.left;
};

/** `CODE: reason` of a failed read. */
const reasonOf = async (dir: string): Promise<string> => {
  const failure = await failureOf(dir);
  return failure._tag === 'ReadFailed' ? `${failure.code}: ${failure.reason}` : failure._tag;
};

describe('readConfigFile', () => {
  it('reads through the resolved ..data link of a kubelet-managed dir', async () => {
    const dir = tmp.path;
    atomicWrite(dir, { 'models.json': '[1]' });
    expect(await read(dir)).toEqual({
      _tag: 'Right',
      right: { file: join(dir, 'models.json'), text: '[1]' },
    });
  });

  it('reads a plain models.json when there is no ..data link', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), '[]');
    expect(await read(dir)).toEqual({ _tag: 'Right', right: { file: join(dir, 'models.json'), text: '[]' } });
  });

  it('says why when models.json is missing, naming the file', async () => {
    expect(await failureOf(tmp.path)).toEqual({
      _tag: 'ReadFailed',
      file: join(tmp.path, 'models.json'),
      code: 'ENOENT',
      reason: 'it does not exist',
    });
  });

  it('says that the config dir is a file when --config-dir names models.json itself, not that ..data is', async () => {
    const file = join(tmp.path, 'models.json');
    await writeFile(file, '[]');
    expect(await reasonOf(file)).toBe(
      `ENOTDIR: the config dir ${file} is a regular file, not a directory (--config-dir names the dir the ConfigMap is mounted at)`,
    );
  });

  it('says that ..data dangles when it points at a version that is gone', async () => {
    const dir = tmp.path;
    await symlink('..2026_01_01_00_00_00.1', join(dir, '..data'));
    expect(await failureOf(dir)).toMatchObject({
      _tag: 'ReadFailed',
      code: 'ENOENT',
      reason: '..data is a link to ..2026_01_01_00_00_00.1, which does not exist',
    });
  });

  it('refuses a ..data that leads outside the config dir', async () => {
    const dir = tmp.path;
    const elsewhere = await tempDir('config-elsewhere');
    try {
      await writeFile(join(elsewhere, 'models.json'), '[]');
      await symlink(elsewhere, join(dir, '..data'));
      expect(await failureOf(dir)).toMatchObject({
        _tag: 'ReadFailed',
        code: 'EOUTSIDE',
        reason: `..data leads to ${elsewhere}, not to a version dir beside it in the config dir; it is not read`,
      });
    } finally {
      await removeTempDir(elsewhere);
    }
  });

  it('says that models.json is a dangling link, and where it points', async () => {
    const dir = tmp.path;
    await symlink('gone.json', join(dir, 'models.json'));
    expect(await failureOf(dir)).toMatchObject({
      code: 'ENOENT',
      reason: 'it is a link to gone.json, which does not exist',
    });
  });

  it('refuses a FIFO at once instead of blocking on it, and reads the file that replaces it', async () => {
    const dir = tmp.path;
    execFileSync('mkfifo', [join(dir, 'models.json')]);
    expect(await failureOf(dir)).toEqual({
      _tag: 'ReadFailed',
      file: join(dir, 'models.json'),
      code: 'ENOTREG',
      reason: 'it is a FIFO (named pipe), not a regular file; modelsync reads only regular files',
    });
    atomicWrite(dir, { 'models.json': '[]' }); // kubelet replaces the plain file with its link
    expect(await read(dir)).toMatchObject({ _tag: 'Right', right: { text: '[]' } });
  });

  it('refuses a socket, a directory and a device, naming what each is', async () => {
    const dir = tmp.path;
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(join(dir, 'models.json'), resolve));
    try {
      expect(await reasonOf(dir)).toMatch(/^ENOTREG: it is a socket, not a regular file/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    await mkdir(join(dir, 'models.json'));
    expect(await reasonOf(dir)).toMatch(/^ENOTREG: it is a directory, not a regular file/);
    const other = join(dir, 'other');
    await mkdir(other);
    await symlink('/dev/zero', join(other, 'models.json'));
    expect(await reasonOf(other)).toMatch(/^ENOTREG: it is a character device, not a regular file/);
  });

  it('says permission denied in words when the file cannot be opened', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), '[]');
    // Tests run as root, which no file mode stops: the open is refused the way the kernel refuses it.
    const openFile = (): Promise<FileHandle> =>
      Promise.reject(
        Object.assign(new Error(`EACCES: permission denied, open '${dir}/models.json'`), { code: 'EACCES' }),
      );
    expect(await failureOf(dir, { openFile })).toMatchObject({
      code: 'EACCES',
      reason: 'permission denied (EACCES)',
    });
  });

  it('refuses a 10 GiB file without reading it, naming its size and the flag', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), '');
    await truncate(join(dir, 'models.json'), 10 * 1024 ** 3); // sparse: reading it would take minutes
    const failure = await failureOf(dir, { maxBytesName: '--max-config-bytes' });
    expect(failure).toEqual({
      _tag: 'TooLarge',
      limit: '--max-config-bytes',
      file: join(dir, 'models.json'),
      bytes: 10 * 1024 ** 3,
      maxBytes: 32 * 1024 ** 2,
    });
  });

  it('reads a file of exactly maxBytes and refuses one byte more', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), `[${' '.repeat(98)}]`);
    expect(await read(dir, { maxBytes: 100 })).toMatchObject({ _tag: 'Right' });
    await writeFile(join(dir, 'models.json'), `[${' '.repeat(99)}]`);
    expect(await failureOf(dir, { maxBytes: 100 })).toMatchObject({
      _tag: 'TooLarge',
      bytes: 101,
      maxBytes: 100,
    });
  });

  it('stops at maxBytes + 1 when the file grows after its size was checked', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), '[]');
    // The file grows between the fstat and the reads, as a writer appending in place would make it.
    const openFile = async (path: string, flags: number): Promise<FileHandle> => {
      const handle = await open(path, flags);
      const stat = handle.stat.bind(handle);
      let calls = 0;
      return Object.assign(handle, {
        stat: async () => {
          const stats = await stat();
          if (++calls === 1) await writeFile(path, 'x'.repeat(1000));
          return stats;
        },
      });
    };
    expect(await failureOf(dir, { maxBytes: 100, openFile })).toMatchObject({
      _tag: 'TooLarge',
      bytes: 1000,
      maxBytes: 100,
    });
  });

  it('reads again while swaps in quick succession each remove the version it had resolved, and reads the last', async () => {
    const dir = tmp.path;
    atomicWrite(dir, { 'models.json': '[0]' });
    // A swap between each of the first five reads' resolving and opening: each opens a version dir already gone.
    let swaps = 0;
    const openFile = (path: string, flags: number): Promise<FileHandle> => {
      if (swaps < 5) atomicWrite(dir, { 'models.json': `[${++swaps}]` });
      return open(path, flags);
    };
    const result = await read(dir, { openFile });
    expect(result).toMatchObject({ _tag: 'Right', right: { text: '[5]' } });
  });

  it('drops a UTF-8 byte-order mark and refuses UTF-16, saying what the file is', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), Buffer.from([0xef, 0xbb, 0xbf, 0x5b, 0x5d]));
    expect(await read(dir)).toMatchObject({ _tag: 'Right', right: { text: '[]' } });
    await writeFile(join(dir, 'models.json'), Buffer.from('\ufeff[]', 'utf16le'));
    expect(await failureOf(dir)).toEqual({
      _tag: 'InvalidEncoding',
      file: join(dir, 'models.json'),
      found: 'UTF-16 little-endian text (with a byte-order mark)',
    });
  });
});
