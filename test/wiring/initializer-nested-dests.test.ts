/** The storage initializer's pairs whose dests nest: every pair's files stay, as KServe writes each into its dest. */
import { join } from 'node:path';
import pino from 'pino';
import * as E from 'fp-ts/Either';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { initializerStorage } from '../../src/wiring/initializer-storage';
import { readFiles, writeFiles } from '../helpers/file-tree';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

describe('initializerStorage with one dest below another', () => {
  const tmp = useTempDir('initializer-nested');

  // KServe's storageUris give each URI a mountPath under one volume, in any order: a tokenizer at
  // /mnt/models/tokenizer listed before the base model at /mnt/models. The base model's own `tokenizer/` replaced
  // the dir the first pair had filled, whose files were gone with exit 0; in the other order both stayed.
  it.each(['the nested dest first', 'the parent dest first'])(
    'merges a dir holding what an earlier pair wrote, in either order (%s)',
    async (order) => {
      const base = join(tmp.path, 'source', 'base');
      const tokenizer = join(tmp.path, 'source', 'tokenizer');
      await writeFiles(base, {
        'config.json': 'base',
        'tokenizer/vocab.txt': 'base vocab',
        'tokenizer/sub/a.txt': 'base a',
        'tokenizer/shared.txt': 'base',
      });
      await writeFiles(tokenizer, {
        'special.json': 'special',
        'sub/b.txt': 'tok b',
        'shared.txt': 'tokenizer',
      });
      const models = join(tmp.path, 'mnt', 'models');
      const pairs: ReadonlyArray<readonly [string, string]> = [
        [tokenizer, join(models, 'tokenizer')],
        [base, models],
      ];
      const storage = initializerStorage(
        { ...defaultAppConfig, localStorageRoots: [join(tmp.path, 'source')], localModelFiles: 'copy' },
        pino(new LogSink()),
        {},
      );
      if (E.isLeft(storage)) throw new Error(storage.left);

      for (const [uri, dest] of order === 'the nested dest first' ? pairs : [...pairs].reverse())
        await storage.right.download(uri, dest, new AbortController().signal);

      // Every pair's files, the later pair's where both hold a name.
      expect(await readFiles(models)).toEqual({
        'config.json': 'base',
        'tokenizer/vocab.txt': 'base vocab',
        'tokenizer/sub/a.txt': 'base a',
        'tokenizer/special.json': 'special',
        'tokenizer/sub/b.txt': 'tok b',
        'tokenizer/shared.txt': order === 'the nested dest first' ? 'base' : 'tokenizer',
      });
      await storage.right.close();
    },
  );

  it('still replaces, by name, a dir an earlier run left in a dest above a pair of this run', async () => {
    const source = join(tmp.path, 'source', 'm');
    await writeFiles(source, { 'a/new.txt': 'new' });
    const models = join(tmp.path, 'mnt', 'models');
    await writeFiles(models, { 'a/stale.txt': 'stale', 'b/left.txt': 'left' });
    const storage = initializerStorage(
      { ...defaultAppConfig, localStorageRoots: [join(tmp.path, 'source')], localModelFiles: 'copy' },
      pino(new LogSink()),
      {},
    );
    if (E.isLeft(storage)) throw new Error(storage.left);

    await storage.right.download(source, join(models, 'b'), new AbortController().signal);
    await storage.right.download(source, models, new AbortController().signal);

    // `a` held nothing of this run: replaced whole; `b` holds the first pair's files: left with them.
    expect(await readFiles(models)).toEqual({
      'a/new.txt': 'new',
      'b/left.txt': 'left',
      'b/a/new.txt': 'new',
    });
    await storage.right.close();
  });
});
