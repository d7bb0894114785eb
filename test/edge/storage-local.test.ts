import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { localStorage } from '../../src/edge/storage-local';
import { effectError } from '../helpers/effect-error';
import { listTree } from '../helpers/list-tree';

describe('localStorage', () => {
  let root: string;
  let source: string;
  let target: string;
  const signal = new AbortController().signal;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'modelsync-local-'));
    source = path.join(root, 'source');
    target = path.join(root, 'target');
    await mkdir(source);
    await mkdir(target);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('serves the file scheme', () => {
    expect(localStorage().schemes).toEqual(['file']);
  });

  it('copies a single file into targetDir/<basename>', async () => {
    await writeFile(path.join(source, 'model.joblib'), 'Temporary content\n');
    await localStorage().download(path.join(source, 'model.joblib'), target, signal);
    expect(await listTree(target)).toEqual(['model.joblib']);
    expect(await readFile(path.join(target, 'model.joblib'), 'utf8')).toBe('Temporary content\n');
  });

  it('copies the contents of a directory tree when given a file:// URL', async () => {
    await mkdir(path.join(source, 'a', 'b'), { recursive: true });
    await writeFile(path.join(source, 'config.json'), '{}');
    await writeFile(path.join(source, 'a', 'b', 'weights.bin'), Buffer.from([1, 2, 3]));
    await mkdir(path.join(source, 'empty'));
    await localStorage().download(pathToFileURL(source).href, target, signal);
    expect(await listTree(target)).toEqual(['a/', 'a/b/', 'a/b/weights.bin', 'config.json', 'empty/']);
    expect(await readFile(path.join(target, 'a', 'b', 'weights.bin'))).toEqual(Buffer.from([1, 2, 3]));
  });

  it('recreates symlinks inside the source tree as relative symlinks', async () => {
    await mkdir(path.join(source, 'blobs'));
    await mkdir(path.join(source, 'snapshots'));
    await writeFile(path.join(source, 'blobs', 'abc'), 'weights');
    await symlink(path.join(source, 'blobs', 'abc'), path.join(source, 'snapshots', 'model.bin'));
    await symlink('.', path.join(source, 'self'));
    await localStorage().download(source, target, signal);
    expect(await listTree(target)).toEqual([
      'blobs/',
      'blobs/abc',
      'self -> .',
      'snapshots/',
      'snapshots/model.bin -> ../blobs/abc',
    ]);
    expect(await readFile(path.join(target, 'snapshots', 'model.bin'), 'utf8')).toBe('weights');
  });

  it('follows the given path when it is itself a symlink', async () => {
    await writeFile(path.join(source, 'model.pt'), 'pt');
    await symlink(source, path.join(root, '..data'));
    await localStorage().download(path.join(root, '..data'), target, signal);
    expect(await listTree(target)).toEqual(['model.pt']);
  });

  it('fails permanently when a symlink points outside the source tree', async () => {
    await writeFile(path.join(root, 'secret'), 'secret');
    await symlink(path.join(root, 'secret'), path.join(source, 'leak'));
    const error = await effectError(localStorage().download(source, target, signal));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(`refusing symlink ${path.join(source, 'leak')}`);
    expect(error.message).toContain('outside');
  });

  it('fails permanently when a symlink leads nowhere', async () => {
    await symlink('missing', path.join(source, 'dangling'));
    const error = await effectError(localStorage().download(source, target, signal));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('cannot be resolved');
  });

  it('fails permanently, naming the path, when the path does not exist', async () => {
    const missing = path.join(root, 'nope');
    const error = await effectError(localStorage().download(missing, target, signal));
    expect(error.retryable).toBe(false);
    expect(error.message).toBe(`local path ${missing} does not exist`);
  });

  it('fails permanently when the file URL names another host', async () => {
    const error = await effectError(localStorage().download('file://otherhost/data/m1', target, signal));
    expect(error.retryable).toBe(false);
  });

  it('refuses to copy a directory into a target inside it', async () => {
    const inner = path.join(source, 'models', 'tmp');
    await mkdir(inner, { recursive: true });
    const error = await effectError(localStorage().download(source, inner, signal));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('inside it');
  });

  it('rejects without copying when the signal is already aborted', async () => {
    await writeFile(path.join(source, 'model.pt'), 'pt');
    const controller = new AbortController();
    controller.abort();
    const error = await effectError(localStorage().download(source, target, controller.signal));
    expect(error.message).toContain('aborted');
    expect(await listTree(target)).toEqual([]);
  });
});
