/** readSmallFile: a settings file read whole only when it is a regular file within its cap. */
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readSmallFile } from '../../src/fs/small-file';
import { makeFifo } from '../hardening/neighbour/sentinel';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('small-file');

describe('readSmallFile', () => {
  it('reads a file of exactly maxBytes, through a link (a projected token is one)', async () => {
    await writeFile(join(tmp.path, 'token'), 'x'.repeat(64));
    await symlink(join(tmp.path, 'token'), join(tmp.path, 'link'));
    expect((await readSmallFile(join(tmp.path, 'link'), 64, 'the token file', 'follow')).toString()).toBe(
      'x'.repeat(64),
    );
  });

  it('refuses a file one byte over maxBytes, naming it and never its content', async () => {
    const file = join(tmp.path, 'token');
    await writeFile(file, 'secret-'.repeat(10));
    await expect(readSmallFile(file, 69, `the token file ${file}`, 'follow')).rejects.toThrow(
      new Error(`the token file ${file} is 70 bytes, over 69; it is not read`),
    );
  });

  it('refuses a FIFO at once instead of blocking on it', async () => {
    const fifo = join(tmp.path, 'fifo');
    await makeFifo(fifo);
    await expect(readSmallFile(fifo, 1024, `the kubeconfig ${fifo}`, 'follow')).rejects.toThrow(
      new Error(`the kubeconfig ${fifo} is a FIFO (named pipe), not a regular file; it is not read`),
    );
  });

  it('refuses a device that reads without end (/dev/zero) without reading it', async () => {
    await expect(readSmallFile('/dev/zero', 1024, 'the client key /dev/zero', 'follow')).rejects.toThrow(
      'the client key /dev/zero is a character device, not a regular file; it is not read',
    );
  });

  it("refuses a link with links: 'refuse' (the model dir's files), and reads the file it points to", async () => {
    const file = join(tmp.path, 'config.pbtxt');
    await writeFile(file, 'name: "m"');
    await symlink(file, join(tmp.path, 'link'));
    await expect(
      readSmallFile(join(tmp.path, 'link'), 64, `config.pbtxt ${join(tmp.path, 'link')}`, 'refuse'),
    ).rejects.toThrow(
      `config.pbtxt ${join(tmp.path, 'link')} is a symlink, not a regular file; it is not read`,
    );
    expect((await readSmallFile(file, 64, 'config.pbtxt', 'refuse')).toString()).toBe('name: "m"');
  });

  it('refuses a directory, whatever the link rule', async () => {
    await expect(readSmallFile(tmp.path, 64, 'the marker', 'refuse')).rejects.toThrow(
      'is a directory, not a regular file',
    );
    await expect(readSmallFile(tmp.path, 64, 'the kubeconfig', 'follow')).rejects.toThrow(
      'is a directory, not a regular file',
    );
  });
});
