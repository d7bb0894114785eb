/** Tests of local copies with a model's allow and ignore patterns, on real temp dirs. */
import fsPromises, { mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FileSelection } from '../../../src/core/file-selection';
import { localFileStorage } from '../../../src/storage/local/local-storage';
import { effectError } from '../../helpers/effect-error';
import { listTree, writeFiles } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';
import { tarball } from '../archive/builders';

const signal = new AbortController().signal;
const tokenizer: FileSelection = { allowPatterns: ['*.json', 'tokenizer*'], ignorePatterns: ['skip/'] };

const tokenizerModel = {
  'config.json': '{}',
  'tokenizer.model': 'spm',
  'model-00001.safetensors': 'weights',
  'nested/vocab.json': '{"a":1}',
  'nested/deep/weights.bin': 'w',
  'skip/extra.json': '{}',
};

describe('localFileStorage with a selection', () => {
  const tmp = useTempDir('local-selection');
  let source: string;
  let target: string;
  const local = () => localFileStorage({ roots: [tmp.path] });

  beforeEach(async () => {
    const run = Math.random().toString(36).slice(2);
    source = path.join(tmp.path, `source-${run}`);
    target = path.join(tmp.path, `target-${run}`);
    await mkdir(source);
    await mkdir(target);
  });

  it('copies only the files whose paths in the tree the patterns take, and only their dirs', async () => {
    await writeFiles(source, tokenizerModel);
    await mkdir(path.join(source, 'empty'));
    await local().download(source, target, signal, undefined, { select: tokenizer });
    expect(await listTree(target)).toEqual([
      'config.json',
      'nested/',
      'nested/vocab.json',
      'tokenizer.model',
    ]);
  });

  it('copies a link the patterns take to a file they take as a link, and to a file they leave out as the file', async () => {
    await writeFiles(source, { 'blobs/abc': 'vocab', 'vocab.json': '{}' });
    await symlink('blobs/abc', path.join(source, 'tokenizer.json'));
    await symlink('vocab.json', path.join(source, 'tokenizer_config.json'));
    await local().download(source, target, signal, undefined, { select: tokenizer });
    expect(await listTree(target)).toEqual([
      'tokenizer.json',
      'tokenizer_config.json -> vocab.json',
      'vocab.json',
    ]);
    expect(await readFile(path.join(target, 'tokenizer.json'), 'utf8')).toBe('vocab');
  });

  it('copies no file through a dir of the source swapped for a link once a link to a file the patterns leave out was resolved', async () => {
    const secrets = path.join(tmp.path, `secrets-${Math.random().toString(36).slice(2)}`);
    await writeFiles(secrets, { abc: 'secret' });
    await writeFiles(source, { 'blobs/abc': 'vocab' });
    await symlink('blobs/abc', path.join(source, 'tokenizer.json'));
    const resolve = fsPromises.realpath.bind(fsPromises);
    let swapped = false;
    // The link is resolved and checked inside the source; then the model server swaps the dir on its way.
    const resolving = jest.spyOn(fsPromises, 'realpath').mockImplementation((async (at: string) => {
      const resolved = await resolve(at);
      if (!swapped && at.endsWith('tokenizer.json')) {
        swapped = true;
        await rename(path.join(source, 'blobs'), path.join(source, 'moved'));
        await symlink(secrets, path.join(source, 'blobs'));
      }
      return resolved;
    }) as never);
    try {
      await local()
        .download(source, target, signal, undefined, { select: tokenizer })
        .catch(() => undefined);
    } finally {
      resolving.mockRestore();
    }
    expect(swapped).toBe(true);
    const files = (await listTree(target)).filter((entry) => !entry.includes(' -> '));
    const texts = await Promise.all(files.map((file) => readFile(path.join(target, file), 'utf8')));
    expect(texts).not.toContain('secret');
  });

  it('fails for good, naming the patterns and the count, when they select none of the files', async () => {
    await writeFiles(source, tokenizerModel);
    const error = await effectError(
      local().download(source, target, signal, undefined, { select: { allowPatterns: ['*.onnx'] } }),
    );
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toBe(
      `copying ${source}: the patterns allow=["*.onnx"] ignore=[] select none of its 6 files`,
    );
    expect(await listTree(target)).toEqual([]);
  });

  it('checks a lone file by its name', async () => {
    await writeFile(path.join(source, 'model.pt'), 'x');
    const file = path.join(source, 'model.pt');
    await local().download(file, target, signal, undefined, { select: { allowPatterns: ['*.pt'] } });
    expect(await listTree(target)).toEqual(['model.pt']);
    const error = await effectError(
      local().download(file, target, signal, undefined, { select: { ignorePatterns: ['*.pt'] } }),
    );
    expect(error).toMatchObject({
      kind: 'not-found',
      message: expect.stringContaining('none of its 1 file') as string,
    });
  });

  it('extracts only the entries of a local archive that the patterns take', async () => {
    const archive = path.join(source, 'model.tar');
    await writeFile(
      archive,
      tarball([
        { name: 'config.json', content: '{}' },
        { name: 'w.bin', content: 'w' },
      ]),
    );
    await local().download(archive, target, signal, undefined, { select: { allowPatterns: ['*.json'] } });
    expect(await listTree(target)).toEqual(['config.json']);
  });

  // The model server shares the volume: as the same user (or root) it may swap a dir of the staging dir for a link.
  it('writes no file, dir or link through a dir of the target a neighbour made a link', async () => {
    const outside = path.join(tmp.path, `outside-${path.basename(target)}`);
    await mkdir(outside);
    await writeFiles(source, { 'nested/vocab.json': '{}', 'nested/deep/tokenizer.json': '{}' });
    await symlink('vocab.json', path.join(source, 'nested', 'tokenizer_config.json'));
    await symlink(outside, path.join(target, 'nested'));
    await local()
      .download(source, target, signal, undefined, { select: tokenizer })
      .catch(() => undefined);
    expect(await readdir(outside)).toEqual([]);
  });
});
