/** The background flusher: a burst of installs flushed once it pauses; a model dir gone meanwhile is no failure. */
import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { backgroundFlusher } from '../../src/model-dir/background-flush';
import { makeFifo } from '../hardening/neighbour/sentinel';
import { countingHandles } from '../helpers/held-handles';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('background-flush');
const pacing = { quietMs: 10, maxDelayMs: 50 };

const installed = async (root: string, name: string, files = 1) => {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'model.bin'), name);
  for (let i = 1; i < files; i++) await writeFile(join(dir, `shard-${i}.bin`), name);
  const written = ['model.bin', ...Array.from({ length: files - 1 }, (_, i) => `shard-${i + 1}.bin`)];
  return { dir, stats: await lstat(dir), files: written };
};

describe('backgroundFlusher', () => {
  it('flushes every dir of a burst in one batch, and says nothing when all went well', async () => {
    const sink = new LogSink();
    const root = join(tmp.path, 'models');
    const flush = backgroundFlusher(root, pino(sink));
    const [a, b] = [await installed(root, 'a'), await installed(root, 'b')];
    await Promise.all([flush(a.dir, a.stats, a.files, true), flush(b.dir, b.stats, b.files, true)]);
    expect(sink.lines).toEqual([]);
  });

  it('says nothing when the model dir itself was removed before its flush (an agent stopped, its dir gone)', async () => {
    const sink = new LogSink();
    const root = join(tmp.path, 'models');
    const flush = backgroundFlusher(root, pino(sink), pacing);
    const a = await installed(root, 'a');
    const flushed = flush(a.dir, a.stats, a.files);
    await rm(root, { recursive: true });
    await flushed;
    expect(sink.lines).toEqual([]);
  });

  it('says nothing when the model dir is removed while its dirs are flushed, at any moment of the flush', async () => {
    for (const delayMs of [0, 1, 2, 3, 5, 8]) {
      const sink = new LogSink();
      const root = join(tmp.path, `models-${delayMs}`);
      const flush = backgroundFlusher(root, pino(sink), pacing);
      const dirs = await Promise.all(['a', 'b', 'c', 'd'].map((name) => installed(root, name, 100)));
      const flushed = Promise.all(dirs.map(({ dir, stats, files }) => flush(dir, stats, files, true)));
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await rm(root, { recursive: true });
      await flushed;
      expect(sink.lines).toEqual([]);
    }
  });

  it('flushes what the install wrote and its dirs alone, not a tree a neighbour planted meanwhile', async () => {
    // The model server may nest dirs at will in its model dir between the install and its flush: a walk held one
    // descriptor a level (EMFILE past the limit, for every open of the process) and fsynced all it found.
    const sink = new LogSink();
    const root = join(tmp.path, 'models');
    const flush = backgroundFlusher(root, pino(sink), pacing);
    const a = await installed(root, 'a');
    await mkdir(join(a.dir, 'v1'));
    await writeFile(join(a.dir, 'v1', 'config.json'), '{}');
    let planted = join(a.dir, 'planted');
    for (let level = 0; level < 200; level++) planted = join(planted, 'd');
    await mkdir(planted, { recursive: true });
    await writeFile(join(planted, 'file.bin'), 'x');
    const { mostHeld, syncs } = await countingHandles(() =>
      flush(a.dir, a.stats, ['model.bin', 'v1/config.json'], true),
    );
    expect(sink.lines).toEqual([]);
    expect(syncs).toBe(5); // model.bin, v1/config.json, v1, the model dir, the root
    expect(mostHeld).toBeLessThanOrEqual(4);
  });

  it('flushes the rest of an install whose file a neighbour replaced by a FIFO, and says nothing', async () => {
    // fsync on a FIFO fails (EINVAL): the failure ended the model's flush before its marker and dirs.
    const sink = new LogSink();
    const root = join(tmp.path, 'models');
    const flush = backgroundFlusher(root, pino(sink), pacing);
    const a = await installed(root, 'a', 3);
    await rm(join(a.dir, 'model.bin'));
    await makeFifo(join(a.dir, 'model.bin'));
    const { syncs } = await countingHandles(() => flush(a.dir, a.stats, a.files, true));
    expect(sink.lines).toEqual([]);
    expect(syncs).toBe(5); // the FIFO tried, both shards, the model dir, the root
  });

  it('warns when the model dir cannot be flushed for another reason', async () => {
    const sink = new LogSink();
    const root = join(tmp.path, 'not-a-dir');
    await writeFile(root, 'x');
    const flush = backgroundFlusher(join(root, 'below'), pino(sink), pacing);
    await flush(join(root, 'below', 'a'), await lstat(root), ['model.bin'], true);
    expect(sink.withMessage('cannot flush the model dir')).toHaveLength(1);
  });
});
