/** Tests of where localFileStorage may read from (roots, pseudo filesystems, special files) and its model cap. */
import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { pseudoFilesystemAt } from '../../../src/storage/local/local-roots';
import { localFileStorage } from '../../../src/storage/local/local-storage';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';

const signal = new AbortController().signal;
/** What the CLI calls the roots, as the wiring names them. */
const rootsName = '--local-storage-roots';

describe('localFileStorage: where it reads from', () => {
  const tmp = useTempDir('local-roots');
  let allowed: string;
  let target: string;

  beforeEach(async () => {
    allowed = path.join(tmp.path, 'pvc');
    target = path.join(tmp.path, 'target');
    await mkdir(path.join(allowed, 'm'), { recursive: true });
    await writeFile(path.join(allowed, 'm', 'model.bin'), 'weights');
    await mkdir(target);
  });

  const refusedWith = async (uri: string, roots: ReadonlyArray<string>, why: string): Promise<void> => {
    const error = await effectError(localFileStorage({ roots, rootsName }).download(uri, target, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toBe(why);
    expect(await listTree(target)).toEqual([]);
  };

  it.each([
    ['/proc/self/environ', '/proc'],
    ['/proc/self', '/proc'],
    ['/sys/kernel', '/sys'],
    ['/dev/null', '/dev'],
    ['file:///proc/1/cmdline', '/proc'],
  ])('refuses %s for good, whatever the roots allow', async (uri, top) => {
    const shown = uri.replace('file://', '');
    await refusedWith(
      uri,
      ['/'],
      `copying ${shown}: refused: it lies under ${top}, which holds no models but the system's own files`,
    );
  });

  it('resolves symlinks before checking: a link to /proc/self is refused', async () => {
    await symlink('/proc/self', path.join(allowed, 'me'));
    const uri = path.join(allowed, 'me');
    await refusedWith(
      uri,
      [allowed],
      `copying ${uri}: refused: it lies under /proc, which holds no models but the system's own files`,
    );
  });

  it('copies from inside a root, and refuses a path outside every root naming the flag', async () => {
    const outside = path.join(tmp.path, 'elsewhere');
    await mkdir(outside);
    await refusedWith(
      outside,
      ['/nowhere', allowed],
      `copying ${outside}: refused: it lies outside --local-storage-roots (/nowhere, ${allowed})`,
    );
    await localFileStorage({ roots: ['/nowhere', allowed], rootsName }).download(
      path.join(allowed, 'm'),
      target,
      signal,
    );
    expect(await listTree(target)).toEqual(['model.bin']);
  });

  it('refuses a link inside a root that leads outside it', async () => {
    const outside = path.join(tmp.path, 'secret');
    await mkdir(outside);
    await symlink(outside, path.join(allowed, 'escape'));
    const uri = path.join(allowed, 'escape');
    await refusedWith(
      uri,
      [allowed],
      `copying ${uri}: refused: it lies outside --local-storage-roots (${allowed})`,
    );
  });

  it('refuses a sibling whose name only begins like a root', async () => {
    await mkdir(`${allowed}-other`);
    await refusedWith(
      `${allowed}-other`,
      [allowed],
      `copying ${allowed}-other: refused: it lies outside --local-storage-roots (${allowed})`,
    );
  });

  it('resolves the roots too: a root that is a symlink allows what it points to', async () => {
    await symlink(allowed, path.join(tmp.path, 'pvc-link'));
    await localFileStorage({ roots: [path.join(tmp.path, 'pvc-link')], rootsName }).download(
      path.join(allowed, 'm', 'model.bin'),
      target,
      signal,
    );
    expect(await listTree(target)).toEqual(['model.bin']);
  });

  it('refuses every local path when no root is given', async () => {
    const uri = path.join(allowed, 'm');
    await refusedWith(
      uri,
      [],
      `copying ${uri}: refused: local storage is off (--local-storage-roots is empty)`,
    );
  });

  it('refuses a FIFO given as the path, without blocking on it', async () => {
    const fifo = path.join(allowed, 'pipe');
    execFileSync('mkfifo', [fifo]);
    await refusedWith(fifo, [allowed], `refusing ${fifo}: not a regular file or directory`);
  });

  it('tells pseudo filesystems by their statfs type, whatever their path', async () => {
    expect(await pseudoFilesystemAt('/proc')).toBe('proc');
    expect(await pseudoFilesystemAt('/sys')).toBe('sysfs');
    expect(await pseudoFilesystemAt('/dev/pts')).toBe('devpts');
    expect(await pseudoFilesystemAt(tmp.path)).toBeUndefined();
  });
});

describe('localFileStorage: --max-model-bytes', () => {
  const tmp = useTempDir('local-cap');
  let source: string;
  let target: string;

  beforeEach(async () => {
    source = path.join(tmp.path, 'source');
    target = path.join(tmp.path, 'target');
    await mkdir(source);
    await mkdir(target);
  });

  const capped = (maxModelBytes: number) =>
    localFileStorage({ roots: [tmp.path], limits: { ...cliDownloadLimits, maxModelBytes } });

  it('refuses a file above the cap for good, before copying it', async () => {
    await writeFile(path.join(source, 'model.bin'), Buffer.alloc(2000));
    const error = await effectError(capped(1000).download(path.join(source, 'model.bin'), target, signal));
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toBe(
      `copying ${path.join(source, 'model.bin')}: too large: it is 1.95 KiB, over the cap of 1000 bytes (--max-model-bytes)`,
    );
    expect(await listTree(target)).toEqual([]);
  });

  it('refuses a tree whose files together pass the cap, before copying the file that passes it', async () => {
    await writeFile(path.join(source, 'a.bin'), Buffer.alloc(600));
    await writeFile(path.join(source, 'b.bin'), Buffer.alloc(600));
    const error = await effectError(capped(1000).download(source, target, signal));
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toBe(
      `copying ${source}: too large: 600 bytes more, over the cap of 1000 bytes (--max-model-bytes)`,
    );
    expect(await listTree(target)).toEqual(['a.bin']);
  });

  it('copies a tree of exactly the cap', async () => {
    await writeFile(path.join(source, 'a.bin'), Buffer.alloc(600));
    await writeFile(path.join(source, 'b.bin'), Buffer.alloc(400));
    await capped(1000).download(source, target, signal);
    expect(await listTree(target)).toEqual(['a.bin', 'b.bin']);
  });
});
