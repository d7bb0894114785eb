/** Tests of localFileStorage on real temp dirs: files, trees, archives, links and failures by kind. */
import fsPromises, { chmod, mkdir, readFile, rename, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDir } from '../../../src/fs';
import { localFileStorage } from '../../../src/storage/local/local-storage';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { countingHandles } from '../../helpers/held-handles';
import { tarball, tgz, zipArchive, zipLink, type TarEntry } from '../archive/builders';
import { removeTempDir, tempDir, useTempDir } from '../../helpers/temp-dir';

describe('localFileStorage', () => {
  const tmp = useTempDir('local');
  let source: string;
  let target: string;
  const signal = new AbortController().signal;
  const local = () => localFileStorage({ roots: [tmp.path] });

  beforeEach(async () => {
    source = path.join(tmp.path, 'source');
    target = path.join(tmp.path, 'target');
    await mkdir(source);
    await mkdir(target);
  });

  // A volume the model server can write too (a claim it mounts, --local-model-files link): it may swap a dir of the
  // source for a link to one outside the roots (the pod's service account token, credentials) as it is copied.
  it('copies nothing through a source dir swapped for a link to a dir outside the roots mid-copy', async () => {
    const secrets = await tempDir('secrets');
    try {
      await writeFile(path.join(secrets, 'token'), 'secret');
      await mkdir(path.join(source, 'sub'));
      await writeFile(path.join(source, 'sub', 'a.bin'), 'weights');
      await writeFile(path.join(source, 'top.bin'), 'top');
      const makeDir = fsPromises.mkdir.bind(fsPromises);
      let swapped = false;
      // Listed as a dir, swapped as its copy in the target is made.
      const making = jest.spyOn(fsPromises, 'mkdir').mockImplementation((async (
        at: string,
        ...rest: never[]
      ) => {
        if (!swapped && String(at).endsWith(`${path.sep}sub`)) {
          swapped = true;
          await rename(path.join(source, 'sub'), path.join(source, 'moved'));
          await symlink(secrets, path.join(source, 'sub'));
        }
        return makeDir(at, ...rest);
      }) as never);
      try {
        await local()
          .download(source, target, signal)
          .catch(() => undefined);
      } finally {
        making.mockRestore();
      }
      expect(swapped).toBe(true);
      expect((await listTree(target)).filter((entry) => entry.endsWith('token'))).toEqual([]);
    } finally {
      await removeTempDir(secrets);
    }
  });

  it('copies a source nested 100 dirs deep holding a few descriptors, not one a level', async () => {
    const deep = Array.from({ length: 100 }, () => 'd').join(path.sep);
    await mkdir(path.join(source, deep), { recursive: true });
    await writeFile(path.join(source, deep, 'weights.bin'), 'w');
    await writeFile(path.join(source, 'top.bin'), 't');
    const { mostHeld } = await countingHandles(() => local().download(source, target, signal));
    expect(await readFile(path.join(target, deep, 'weights.bin'), 'utf8')).toBe('w');
    expect(mostHeld).toBeLessThanOrEqual(6);
  });

  it('serves the file scheme', () => {
    expect(localFileStorage().schemes).toEqual(['file']);
  });

  it('copies a single file into targetDir/<basename>', async () => {
    await writeFile(path.join(source, 'model.joblib'), 'Temporary content\n');
    await local().download(path.join(source, 'model.joblib'), target, signal);
    expect(await listTree(target)).toEqual(['model.joblib']);
    expect(await readFile(path.join(target, 'model.joblib'), 'utf8')).toBe('Temporary content\n');
  });

  it('copies small files in one kernel call and big ones as a stream, byte for byte, never over an existing file', async () => {
    const small = Buffer.alloc(64 * 1024, 7);
    const big = Buffer.alloc(9 * 1024 * 1024 + 3, 9); // past the kernel-copy limit (8 MiB)
    await writeFile(path.join(source, 'small.bin'), small);
    await writeFile(path.join(source, 'big.bin'), big);
    await local().download(source, target, signal);
    // Buffer.equals: jest's toEqual walks a 9 MiB buffer byte by byte (half a minute).
    expect((await readFile(path.join(target, 'small.bin'))).equals(small)).toBe(true);
    expect((await readFile(path.join(target, 'big.bin'))).equals(big)).toBe(true);
    await expect(local().download(source, target, signal)).rejects.toMatchObject({ kind: 'filesystem' });
  });

  // The model server reads the model dir as another user (deploy/base: modelsync 65532, the server 1000).
  it('makes every copied file readable by all, keeping its owner and execute bits, as a tar extracts it', async () => {
    const modes = {
      'private.bin': 0o600,
      'group.bin': 0o640,
      'none.bin': 0o000,
      'run.sh': 0o4770,
      'big.bin': 0o600,
    };
    for (const [name, mode] of Object.entries(modes)) {
      await writeFile(path.join(source, name), name === 'big.bin' ? Buffer.alloc(9 * 1024 * 1024) : 'x', {
        mode,
      });
      await chmod(path.join(source, name), mode);
    }
    await mkdir(path.join(source, 'private'), { mode: 0o700 });
    await local().download(source, target, signal);
    const modeOf = async (name: string) => (await stat(path.join(target, name))).mode & 0o7777;
    expect(await Promise.all([...Object.keys(modes), 'private'].map(modeOf))).toEqual([
      0o644, 0o644, 0o444, 0o754, 0o644, 0o755,
    ]);
    await local().download(path.join(source, 'private.bin'), path.join(target, 'private'), signal);
    expect(await modeOf('private/private.bin')).toBe(0o644);
  });

  it('copies the contents of a directory tree when given a file:// URL', async () => {
    await mkdir(path.join(source, 'a', 'b'), { recursive: true });
    await writeFile(path.join(source, 'config.json'), '{}');
    await writeFile(path.join(source, 'a', 'b', 'weights.bin'), Buffer.from([1, 2, 3]));
    await mkdir(path.join(source, 'empty'));
    await local().download(pathToFileURL(source).href, target, signal);
    expect(await listTree(target)).toEqual(['a/', 'a/b/', 'a/b/weights.bin', 'config.json', 'empty/']);
    expect(await readFile(path.join(target, 'a', 'b', 'weights.bin'))).toEqual(Buffer.from([1, 2, 3]));
  });

  it('recreates symlinks inside the source tree as relative symlinks', async () => {
    await mkdir(path.join(source, 'blobs'));
    await mkdir(path.join(source, 'snapshots'));
    await writeFile(path.join(source, 'blobs', 'abc'), 'weights');
    await symlink(path.join(source, 'blobs', 'abc'), path.join(source, 'snapshots', 'model.bin'));
    await symlink('.', path.join(source, 'self'));
    await local().download(source, target, signal);
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
    await symlink(source, path.join(tmp.path, '..data'));
    await local().download(path.join(tmp.path, '..data'), target, signal);
    expect(await listTree(target)).toEqual(['model.pt']);
  });

  it('fails permanently when a symlink points outside the source tree', async () => {
    await writeFile(path.join(tmp.path, 'secret'), 'secret');
    await symlink(path.join(tmp.path, 'secret'), path.join(source, 'leak'));
    const error = await effectError(local().download(source, target, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain(`refusing symlink ${path.join(source, 'leak')}`);
    expect(error.message).toContain('outside');
  });

  it('fails permanently when a symlink leads nowhere', async () => {
    await symlink('missing', path.join(source, 'dangling'));
    const error = await effectError(local().download(source, target, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('cannot be resolved');
  });

  it('fails permanently, naming the path, when the path does not exist', async () => {
    const missing = path.join(tmp.path, 'nope');
    const error = await effectError(local().download(missing, target, signal));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toBe(`local path ${missing} does not exist`);
  });

  it('fails permanently when the file URL names another host', async () => {
    const error = await effectError(local().download('file://otherhost/data/m1', target, signal));
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
  });

  it('keeps user info and queries of a bad file URL out of its message', async () => {
    const uri = 'file://user:secret@otherhost/data/m1?token=secret';
    const error = await effectError(local().download(uri, target, signal));
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).toBe('file://otherhost/data/m1 is not a local path or file:// URL');
  });

  it('refuses to copy a directory into a target inside it', async () => {
    const inner = path.join(source, 'models', 'tmp');
    await mkdir(inner, { recursive: true });
    const error = await effectError(local().download(source, inner, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('inside it');
  });

  it('refuses a target inside the source named by its handle, as the store names a staging dir, writing nothing', async () => {
    await writeFile(path.join(source, 'weights.bin'), 'weights');
    const staging = path.join(source, 'models', '.tmp-m');
    await mkdir(staging, { recursive: true });
    const dir = await openDir(staging);
    try {
      const error = await effectError(local().download(source, dir.ref, signal));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toBe(`refusing to copy ${source} into ${staging}, which lies inside it`);
      expect(await listTree(staging)).toEqual([]);
    } finally {
      await dir.handle.close();
    }
  });

  it("copies names that start with two dots: a projected volume's ..data and a link to ..weights.bin lie inside", async () => {
    await mkdir(path.join(source, '..2026_01_01'));
    await writeFile(path.join(source, '..2026_01_01', 'settings.json'), '{}');
    await symlink('..2026_01_01', path.join(source, '..data'));
    await symlink('..data/settings.json', path.join(source, 'settings.json'));
    await writeFile(path.join(source, '..weights.bin'), 'weights');
    await symlink('..weights.bin', path.join(source, 'weights.bin'));
    await local().download(source, target, signal);
    expect(await readFile(path.join(target, 'settings.json'), 'utf8')).toBe('{}');
    expect(await readFile(path.join(target, 'weights.bin'), 'utf8')).toBe('weights');
  });

  it('copies a model stored below a dir whose name starts with two dots, inside the roots', async () => {
    const archived = path.join(tmp.path, '..archive', 'old-model');
    await mkdir(archived, { recursive: true });
    await writeFile(path.join(archived, 'model.pt'), 'pt');
    await local().download(archived, target, signal);
    expect(await listTree(target)).toEqual(['model.pt']);
  });

  it('rejects without copying when the signal is already aborted', async () => {
    await writeFile(path.join(source, 'model.pt'), 'pt');
    const controller = new AbortController();
    controller.abort();
    const error = await effectError(local().download(source, target, controller.signal));
    expect(error).toMatchObject({ kind: 'aborted', retryable: true, message: `copying ${source} aborted` });
    expect(await listTree(target)).toEqual([]);
  });

  it('fails permanently with a filesystem error when the target already holds the file', async () => {
    await writeFile(path.join(source, 'model.pt'), 'pt');
    await writeFile(path.join(target, 'model.pt'), 'older');
    const error = await effectError(local().download(source, target, signal));
    expect(error).toMatchObject({ kind: 'filesystem', retryable: false });
    expect(error.message).toContain(`copying ${source}: EEXIST`);
    expect(await readFile(path.join(target, 'model.pt'), 'utf8')).toBe('older');
  });

  const modelTar: TarEntry[] = [
    { name: 'model/1/model.pt', content: 'weights' },
    { name: 'model/latest', type: '2', linkname: '1/model.pt' },
  ];
  const modelTree = ['model/', 'model/1/', 'model/1/model.pt', 'model/latest -> 1/model.pt'];

  it.each([
    ['m.tar', tarball(modelTar)],
    ['m.tar.gz', tgz(modelTar)],
    ['M.TGZ', tgz(modelTar)],
    [
      'm.zip',
      zipArchive([{ name: 'model/1/model.pt', content: 'weights' }, zipLink('model/latest', '1/model.pt')]),
    ],
  ])('extracts the archive %s into targetDir, as KServe does', async (file, bytes) => {
    await writeFile(path.join(source, file), bytes);
    await local().download(pathToFileURL(path.join(source, file)).href, target, signal);
    expect(await listTree(target)).toEqual(modelTree);
    expect(await readFile(path.join(target, 'model', 'latest'), 'utf8')).toBe('weights');
  });

  it('copies an archive as it is when it lies in a copied directory beside other entries', async () => {
    await writeFile(path.join(source, 'm.tar'), tarball(modelTar));
    await writeFile(path.join(source, 'README'), 'notes');
    await local().download(source, target, signal);
    expect(await listTree(target)).toEqual(['README', 'm.tar']);
  });

  it.each([
    ['m.tar', tarball(modelTar)],
    ['m.tgz', tgz(modelTar)],
  ])('extracts a directory whose only entry is the archive %s, as KServe does', async (file, bytes) => {
    // KServe's initializer links a local dir's entries into dest, then unpacks the one archive it found alone
    // (`_download_local`: file_count == 1); a pvc:// dir holding one model.tar.gz gave the model server the tarball.
    await writeFile(path.join(source, file), bytes);
    await local().download(source, target, signal);
    expect(await listTree(target)).toEqual(modelTree);
  });

  it('refuses a directory whose only entry is a link to an archive outside it, never unpacking through it', async () => {
    await writeFile(path.join(tmp.path, 'outside.tar'), tarball(modelTar));
    await symlink(path.join(tmp.path, 'outside.tar'), path.join(source, 'm.tar'));
    const error = await effectError(local().download(source, target, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(await listTree(target)).toEqual([]);
  });

  it('fails permanently, naming the entry, on an archive entry that would escape', async () => {
    const file = path.join(source, 'm.tar.gz');
    await writeFile(file, tgz([{ name: '../evil', content: 'x' }]));
    const error = await effectError(local().download(file, target, signal));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toBe(
      `extracting ${file}: refusing archive entry "../evil": its path contains '..'`,
    );
    expect(await listTree(tmp.path)).toEqual(['source/', 'source/m.tar.gz', 'target/']);
  });

  it('fails permanently on a corrupt archive', async () => {
    const file = path.join(source, 'm.zip');
    await writeFile(file, 'not a zip');
    const error = await effectError(local().download(file, target, signal));
    expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
    expect(await listTree(target)).toEqual([]);
  });
});
