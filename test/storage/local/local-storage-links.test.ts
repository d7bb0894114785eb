/**
 * Tests of localFileStorage and pvcStorage with `files: 'link'` (`--local-model-files link`; the default is copy): each
 * file past 1 MiB a symlink to its canonical path, no byte copied, smaller ones copied, every check of a copy kept.
 */
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readFile, readlink, realpath, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { copiedUpToBytes, localFileStorage, pvcStorage } from '../../../src/storage/local/local-storage';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';
import { tarball } from '../archive/builders';

const signal = new AbortController().signal;

describe('localFileStorage linking the files', () => {
  const tmp = useTempDir('local-links');
  let source: string;
  let target: string;
  const linking = (maxModelBytes = cliDownloadLimits.maxModelBytes) =>
    localFileStorage({ roots: [tmp.path], files: 'link', limits: { ...cliDownloadLimits, maxModelBytes } });

  beforeEach(async () => {
    source = path.join(await realpath(tmp.path), 'source');
    target = path.join(tmp.path, 'target');
    await mkdir(path.join(source, 'a', 'b'), { recursive: true });
    await mkdir(target);
  });

  /** Writes `text` at `file`, then grows it (sparse) past what is copied even so: a file that is linked. */
  const linkedSize = async (file: string, text: string): Promise<void> => {
    await writeFile(file, text);
    await truncate(file, copiedUpToBytes + 1);
  };

  /** `target` as listTree shows it: `dir/`, `file`, `link -> its target`. */
  const placed = (): Promise<string[]> => listTree(target);
  const linkTo = (entry: string, file: string): string => `${entry} -> ${file}`;

  it('makes the dirs, links each file past 1 MiB to where it lies by absolute path, and copies the smaller ones', async () => {
    await writeFile(path.join(source, 'config.json'), '{}');
    await linkedSize(path.join(source, 'a', 'b', 'weights.bin'), 'wts');
    await writeFile(path.join(source, 'a', 'b', 'model-settings.json'), Buffer.alloc(copiedUpToBytes, ' '));
    await linking().download(source, target, signal);
    expect(await placed()).toEqual([
      'a/',
      'a/b/',
      'a/b/model-settings.json',
      linkTo('a/b/weights.bin', path.join(source, 'a', 'b', 'weights.bin')),
      'config.json',
    ]);
    expect((await readFile(path.join(target, 'a', 'b', 'weights.bin'))).subarray(0, 3).toString()).toBe(
      'wts',
    );
    expect(await readFile(path.join(target, 'config.json'), 'utf8')).toBe('{}');
  });

  it('takes no room: a 1 GiB file is linked past a 1 KiB --max-model-bytes, the target holding no block', async () => {
    await writeFile(path.join(source, 'big.bin'), 'x');
    await truncate(path.join(source, 'big.bin'), 2 ** 30);
    await linking(1024).download(path.join(source, 'big.bin'), target, signal);
    expect(await placed()).toEqual([linkTo('big.bin', path.join(source, 'big.bin'))]);
    expect(
      Number(execFileSync('du', ['-s', '--block-size=1', target]).toString().split('\t')[0]),
    ).toBeLessThan(64 * 1024);
  });

  it("names the resolved path when the source is named through a link (a volume mount's ..data)", async () => {
    await linkedSize(path.join(source, 'model.bin'), 'w');
    await symlink(source, path.join(tmp.path, 'current'));
    await linking().download(path.join(tmp.path, 'current'), target, signal);
    expect(await placed()).toEqual(['a/', 'a/b/', linkTo('model.bin', path.join(source, 'model.bin'))]);
  });

  it('keeps links inside the tree relative, to the mirrored (linked) file', async () => {
    await writeFile(path.join(source, 'a', 'weights.bin'), 'w');
    await symlink('a/weights.bin', path.join(source, 'latest'));
    await linking().download(source, target, signal);
    expect(await readlink(path.join(target, 'latest'))).toBe('a/weights.bin');
    expect(await readFile(path.join(target, 'latest'), 'utf8')).toBe('w');
  });

  it('refuses what a copy refuses: a link out of the tree, a FIFO', async () => {
    await symlink('/etc/hostname', path.join(source, 'escape'));
    expect(await effectError(linking().download(source, target, signal))).toMatchObject({
      kind: 'refused',
      retryable: false,
    });
    const fifo = path.join(tmp.path, 'fifo-source');
    await mkdir(fifo);
    execFileSync('mkfifo', [path.join(fifo, 'pipe')]);
    const other = path.join(tmp.path, 'other-target');
    await mkdir(other);
    const error = await effectError(linking().download(fifo, other, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(await listTree(other)).toEqual([]);
  });

  it('links only the files the patterns take', async () => {
    await linkedSize(path.join(source, 'model.onnx'), 'm');
    await linkedSize(path.join(source, 'notes.txt'), 'n');
    await linking().download(source, target, signal, undefined, { select: { allowPatterns: ['*.onnx'] } });
    expect(await placed()).toEqual([linkTo('model.onnx', path.join(source, 'model.onnx'))]);
  });

  it('still extracts an archive: its entries are files of the model dir', async () => {
    await writeFile(path.join(source, 'model.tar'), tarball([{ name: 'weights.bin', content: 'w' }]));
    await linking().download(path.join(source, 'model.tar'), target, signal);
    expect(await placed()).toEqual(['weights.bin']);
  });
});

describe('pvcStorage linking the files', () => {
  const tmp = useTempDir('pvc-links');

  it('links <root>/<path> file by file', async () => {
    const root = path.join(await realpath(tmp.path), 'pvc');
    const target = path.join(tmp.path, 'target');
    await mkdir(path.join(root, 'models', 'm1'), { recursive: true });
    await mkdir(target);
    await writeFile(path.join(root, 'models', 'm1', 'model.bin'), 'weights');
    await truncate(path.join(root, 'models', 'm1', 'model.bin'), copiedUpToBytes + 1);
    await writeFile(path.join(root, 'models', 'm1', 'config.pbtxt'), 'name: "m1"');
    await pvcStorage({ root, files: 'link' }).download('pvc://claim/models/m1', target, signal);
    expect(await readlink(path.join(target, 'model.bin'))).toBe(path.join(root, 'models', 'm1', 'model.bin'));
    expect((await readFile(path.join(target, 'model.bin'))).subarray(0, 7).toString()).toBe('weights');
    expect((await lstat(path.join(target, 'config.pbtxt'))).isFile()).toBe(true);
  });
});
