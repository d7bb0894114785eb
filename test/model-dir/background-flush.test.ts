/** The background flusher: a burst of installs flushed once it pauses; a model dir gone meanwhile is no failure. */
import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { backgroundFlusher } from '../../src/model-dir/background-flush';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('background-flush');
const pacing = { quietMs: 10, maxDelayMs: 50 };

const installed = async (root: string, name: string, files = 1) => {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'model.bin'), name);
  for (let i = 1; i < files; i++) await writeFile(join(dir, `shard-${i}.bin`), name);
  return { dir, stats: await lstat(dir) };
};

describe('backgroundFlusher', () => {
  it('flushes every dir of a burst in one batch, and says nothing when all went well', async () => {
    const sink = new LogSink();
    const root = join(tmp.path, 'models');
    const flush = backgroundFlusher(root, pino(sink));
    const [a, b] = [await installed(root, 'a'), await installed(root, 'b')];
    await Promise.all([flush(a.dir, a.stats, true), flush(b.dir, b.stats, true)]);
    expect(sink.lines).toEqual([]);
  });

  it('says nothing when the model dir itself was removed before its flush (an agent stopped, its dir gone)', async () => {
    const sink = new LogSink();
    const root = join(tmp.path, 'models');
    const flush = backgroundFlusher(root, pino(sink), pacing);
    const a = await installed(root, 'a');
    const flushed = flush(a.dir, a.stats);
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
      const flushed = Promise.all(dirs.map(({ dir, stats }) => flush(dir, stats, true)));
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await rm(root, { recursive: true });
      await flushed;
      expect(sink.lines).toEqual([]);
    }
  });

  it('warns when the model dir cannot be flushed for another reason', async () => {
    const sink = new LogSink();
    const root = join(tmp.path, 'not-a-dir');
    await writeFile(root, 'x');
    const flush = backgroundFlusher(join(root, 'below'), pino(sink), pacing);
    await flush(join(root, 'below', 'a'), await lstat(root), true);
    expect(sink.withMessage('cannot flush the model dir')).toHaveLength(1);
  });
});
