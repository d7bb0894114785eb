/** Tests of modelDirStore.fillFrom against real temp dirs: copies (or hard links) checked against the marker, no link followed. */
import { mkdir, readdir, readFile, rename, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import type { ModelSpec } from '../../src/core/model-config';
import { modelDirStore } from '../../src/model-dir/store';
import type { ModelStore, Staged } from '../../src/ports';
import { makeFifo } from '../hardening/neighbour/sentinel';
import { listTree, overwriteInPlace, readFiles, writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { install } from '../helpers/install';
import { LogSink, reasonsIn } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('fill-from');
const live = (): AbortSignal => new AbortController().signal;
const [src, dst] = [name('source'), name('copy')];
const shared = spec('https://models.example/model.tar.gz', '1Gi');
const files = {
  'model.bin': 'weights of the model',
  'conf/config.json': '{"layers":3}',
  'conf/deep/x.txt': 'x',
};
const totalBytes = Object.values(files).reduce((sum, text) => sum + text.length, 0);

let root: string;
let store: ModelStore;
/** The store's log: why each fill refused is its lines' `reason`. */
let log: LogSink;
beforeEach(async () => {
  root = join(tmp.path, 'models');
  await mkdir(root);
  log = new LogSink();
  store = modelDirStore({ root, log: pino({ level: 'info' }, log) });
});

/** Installs `files` as model `model` of `modelSpec`, as a download would have. */
const installed = async (
  model = src,
  modelSpec: ModelSpec = shared,
  content: Readonly<Record<string, string>> = files,
): Promise<void> => {
  const done = await install(store, model, modelSpec, (dir) => writeFiles(dir, content), live());
  await done.dropReplaced();
};

/** The staging dir of a fresh install of `dst`, and its path on disk. */
const staging = async (modelSpec: ModelSpec = shared): Promise<{ staged: Staged; path: string }> => {
  const staged = await store.stage(dst, modelSpec, live());
  const [path] = (await readdir(root)).filter((entry) => entry.startsWith('.tmp-'));
  return { staged, path: join(root, path!) };
};

const inode = async (path: string): Promise<number> => (await stat(path)).ino;

describe('modelDirStore.fillFrom', () => {
  it('copies every file the marker lists (clones where the file system has them), and the filled dir commits with a marker of its own', async () => {
    await installed();
    const { staged } = await staging(spec(shared.storageUri, '2Gi', 'onnx'));

    const filled = await store.fillFrom(src, staged, live());
    await (await staged.commit()).dropReplaced();

    expect(filled).toMatchObject({ files: 3, linkedBytes: 0 });
    expect(filled!.clonedBytes + filled!.copiedBytes).toBe(totalBytes);
    for (const file of Object.keys(files)) {
      expect(await inode(join(root, dst, file))).not.toBe(await inode(join(root, src, file)));
      expect(await readFile(join(root, dst, file), 'utf8')).toBe(files[file as keyof typeof files]);
    }
    const markers = (dir: string) =>
      readdir(join(root, dir)).then((e) => e.filter((f) => f.startsWith('SUCCESS.')));
    expect(await markers(dst)).toHaveLength(1);
    expect(await markers(dst)).not.toEqual(await markers(src));
    expect(await store.isInstalled(dst, spec(shared.storageUri, '2Gi', 'onnx'))).toBe(true);
    // Each dir stands alone: the source can go, the filled model keeps its files.
    await store.remove(src);
    expect(await modelDirStore({ root, log: pino({ level: 'silent' }) }).recover()).toEqual(
      new Map([[dst, spec(shared.storageUri, '2Gi', 'onnx')]]),
    );
  });

  it('hard links every file the marker lists when told the model server cannot write them (linkSameContent)', async () => {
    store = modelDirStore({ root, log: pino({ level: 'silent' }), linkSameContent: true });
    await installed();
    const { staged } = await staging();

    const filled = await store.fillFrom(src, staged, live());
    await (await staged.commit()).dropReplaced();

    expect(filled).toEqual({ files: 3, linkedBytes: totalBytes, clonedBytes: 0, copiedBytes: 0 });
    for (const file of Object.keys(files)) {
      expect(await inode(join(root, dst, file))).toBe(await inode(join(root, src, file)));
    }
    expect(await store.isInstalled(dst, shared)).toBe(true);
  });

  it('gives the filled model files of its own, which no write in place through the source reaches, even after a chmod', async () => {
    await installed();
    const { staged } = await staging();
    await store.fillFrom(src, staged, live());
    await (await staged.commit()).dropReplaced();

    for (const file of Object.keys(files)) await overwriteInPlace(join(root, src, file));

    expect(await readFiles(join(root, dst))).toEqual(expect.objectContaining(files));
    expect(await readFile(join(root, src, 'model.bin'), 'utf8')).toBe('!'.repeat(files['model.bin'].length));
  });

  describe('refuses, leaving the staging dir empty, when', () => {
    /** Fills after `tamper`; the fill must refuse, saying `reason` (a part of its log line's reason). */
    const refused = async (reason: string, tamper: () => Promise<void>): Promise<void> => {
      await tamper();
      const { staged, path } = await staging();
      expect(await store.fillFrom(src, staged, live())).toBeUndefined();
      expect(await readdir(path)).toEqual([]);
      expect(reasonsIn(log).at(-1)).toContain(reason);
      await staged.abandon(new Error('not filled'));
    };
    const at = (file: string): string => join(root, src, file);

    it('a neighbour replaced a file of the source with a symlink', async () => {
      await installed();
      const secret = join(tmp.path, 'secret');
      await writeFile(secret, 'x'.repeat(files['model.bin'].length));
      await refused(`${at('model.bin')}: ELOOP`, async () => {
        await rm(join(root, src, 'model.bin'));
        await symlink(secret, join(root, src, 'model.bin'));
      });
      expect(await listTree(root)).toEqual(expect.arrayContaining([`source/model.bin -> ${secret}`]));
    });

    it('a neighbour replaced a dir of the source with a symlink to a copy of it', async () => {
      await installed();
      const elsewhere = join(tmp.path, 'elsewhere');
      await writeFiles(elsewhere, { 'config.json': files['conf/config.json'], 'deep/x.txt': 'x' });
      await refused(`${at('conf')}: ENOTDIR`, async () => {
        await rm(join(root, src, 'conf'), { recursive: true });
        await symlink(elsewhere, join(root, src, 'conf'));
      });
    });

    // O_NOFOLLOW with O_DIRECTORY fails a link to a dir with ENOTDIR, as it does a file.
    it('the source model dir itself is a symlink to a whole model dir', async () => {
      await installed(name('real'));
      await refused(`${at('')}: ENOTDIR`, () => symlink(join(root, 'real'), join(root, src)));
    });

    it('a file the marker lists is missing, or not the size it lists', async () => {
      await installed();
      await refused(`${at('conf/deep/x.txt')} has 0 bytes, its marker says 1`, () =>
        truncate(at('conf/deep/x.txt'), 0),
      );
      await refused(`${at('conf/deep/x.txt')}: ENOENT`, () => rm(at('conf/deep/x.txt')));
    });

    it('a file the marker lists is a FIFO or a dir', async () => {
      await installed(src, shared, { 'model.bin': '', 'conf/config.json': '' });
      await refused(`${at('model.bin')} is a FIFO (named pipe)`, async () => {
        await rm(join(root, src, 'model.bin'));
        await makeFifo(join(root, src, 'model.bin'));
      });
      await refused(`${at('conf/config.json')} is a directory`, async () => {
        await rm(at('model.bin'));
        await writeFile(at('model.bin'), '');
        await rm(join(root, src, 'conf/config.json'));
        await mkdir(join(root, src, 'conf/config.json'));
      });
    });

    it('the source holds the marker of other stored content', async () => {
      await installed(src, spec('https://models.example/other.tar.gz', '1Gi'));
      await refused('holds other stored content', () => Promise.resolve());
    });

    it('the source holds a selection of other files of the same storage URI', async () => {
      await installed(src, { ...shared, selection: { allowPatterns: ['*.bin'] } }, { 'model.bin': 'w' });
      await refused('holds other stored content', () => Promise.resolve());
    });

    it('the source has no marker, or one that lists no files (as KServe writes it)', async () => {
      await installed();
      const [marker] = (await readdir(join(root, src))).filter((f) => f.startsWith('SUCCESS.'));
      await refused('lists no files', () =>
        writeFile(at(marker!), JSON.stringify({ storageUri: shared.storageUri, memory: '1Gi' })),
      );
      await refused('has no single valid marker', () => rename(at(marker!), at('moved-away')));
    });

    // The marker lists regular files alone: a fill would give a model without them (an archive's links, its empty dirs).
    it.each<[string, string, (dir: string) => Promise<unknown>]>([
      ['a symlink at its top', 'latest', (dir) => symlink('model.bin', join(dir, 'latest'))],
      ['a symlink in a subdir', 'conf/up', (dir) => symlink('..', join(dir, 'conf', 'up'))],
      ['an empty dir', 'assets', (dir) => mkdir(join(dir, 'assets'))],
      [
        'a dir holding a symlink alone',
        'v/self',
        (dir) => mkdir(join(dir, 'v')).then(() => symlink('.', join(dir, 'v', 'self'))),
      ],
    ])('the model holds %s, which its marker cannot list', async (_label, entry, add) => {
      const done = await install(
        store,
        src,
        shared,
        async (dir) => {
          await writeFiles(dir, files);
          await add(dir);
        },
        live(),
      );
      await done.dropReplaced();
      await refused(`${at(entry)}`, () => Promise.resolve());
    });

    it('there is no source model dir', async () => {
      await refused(`${at('')}: ENOENT`, () => Promise.resolve());
    });
  });

  it('fails for a staging dir it did not make or that was settled already', async () => {
    await installed();
    const { staged } = await staging();
    await staged.abandon(new Error('given up'));

    await expect(store.fillFrom(src, staged, live())).rejects.toThrow('not a staging dir of this store');
    await expect(store.fillFrom(src, { ...staged }, live())).rejects.toThrow(
      'not a staging dir of this store',
    );
  });

  it('stops with the abort reason when its signal has aborted', async () => {
    await installed();
    const { staged } = await staging();

    await expect(store.fillFrom(src, staged, AbortSignal.abort(new Error('superseded')))).rejects.toThrow(
      'superseded',
    );
    // The caller abandons what it staged, as the loader does; its dir handle is closed with it.
    await staged.abandon(new Error('superseded'));
  });
});
