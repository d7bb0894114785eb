/** Tests of the plain config-file edits of the testing kit: what a reader sees while each one runs. */
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { deleteAndRecreate, writeInPlace, writeThenRename } from '../../src/testing/plain-writers';
import { waitFor } from '../../src/testing/wait';
import { exists } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('plain-writers');
let vol: string;

beforeEach(() => {
  vol = path.join(tmp.path, 'config');
});

const modeOf = async (p: string): Promise<number> => (await fsp.stat(p)).mode & 0o777;

/** A models.json large enough that a partial read could not pass for a whole one. */
const version = (n: number): string =>
  JSON.stringify({ version: n, models: Array.from({ length: 2000 }, (_, i) => ({ name: `m${i}`, v: n })) });

/** Polls `read` until `accept` holds and returns that read, or the last read when the deadline passes. */
const pollUntil = async <T>(read: () => Promise<T>, accept: (value: T) => boolean, ms = 2000): Promise<T> => {
  let value!: T;
  await waitFor(async () => accept((value = await read())), ms).catch(() => undefined);
  return value;
};

describe('writeInPlace', () => {
  it('leaves a truncated file readable during the pause, then the whole text, on the same inode', async () => {
    await fsp.mkdir(vol);
    const file = path.join(vol, 'models.json');
    await fsp.writeFile(file, 'old');
    const inode = (await fsp.stat(file)).ino;
    const text = version(7);

    const writing = writeInPlace(file, text, { splitAtByte: 100, pauseMs: 300 });
    const partial = await pollUntil(
      () => fsp.readFile(file, 'utf8'),
      (t) => t !== 'old' && t !== '',
    );
    await writing;

    expect(partial).toBe(text.slice(0, 100));
    expect(() => JSON.parse(partial) as unknown).toThrow(SyntaxError);
    expect(await fsp.readFile(file, 'utf8')).toBe(text);
    expect((await fsp.stat(file)).ino).toBe(inode);
  });

  it('splits at half the bytes by default', async () => {
    await fsp.mkdir(vol);
    const file = path.join(vol, 'models.json');

    const writing = writeInPlace(file, '0123456789', { pauseMs: 200 });
    const partial = await pollUntil(
      () => fsp.readFile(file, 'utf8').catch(() => ''),
      (t) => t !== '',
    );
    await writing;

    expect(partial).toBe('01234');
    expect(await fsp.readFile(file, 'utf8')).toBe('0123456789');
  });
});

describe('writeThenRename', () => {
  it('replaces the file with a new inode, keeps its mode and leaves no temp file', async () => {
    await fsp.mkdir(vol);
    const file = path.join(vol, 'models.json');
    await fsp.writeFile(file, 'old', { mode: 0o600 });
    await fsp.chmod(file, 0o600);
    const inode = (await fsp.stat(file)).ino;

    writeThenRename(file, 'new');

    expect(await fsp.readFile(file, 'utf8')).toBe('new');
    expect((await fsp.stat(file)).ino).not.toBe(inode);
    expect(await modeOf(file)).toBe(0o600);
    expect(await fsp.readdir(vol)).toEqual(['models.json']);
  });
});

describe('deleteAndRecreate', () => {
  it('leaves the file missing for the gap, then creates it with the new text', async () => {
    await fsp.mkdir(vol);
    const file = path.join(vol, 'models.json');
    await fsp.writeFile(file, 'old');

    const recreating = deleteAndRecreate(file, 'new', 200);
    const missing = await pollUntil(
      () => exists(file),
      (present) => !present,
    );
    await recreating;

    expect(missing).toBe(false);
    expect(await fsp.readFile(file, 'utf8')).toBe('new');
  });

  it('rejects when the file does not exist', async () => {
    await expect(deleteAndRecreate(path.join(tmp.path, 'absent'), 'x', 0)).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});
