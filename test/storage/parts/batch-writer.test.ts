/** Tests of BatchWriter: chunks land in place in batches, one written while the next gathers, failures kept. */
import { open, readFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { BatchWriter } from '../../../src/storage/parts/batch-writer';
import { useTempDir } from '../../helpers/temp-dir';

const asWriteError = (cause: unknown) => new Error(`cannot write: ${String(cause)}`);

interface HeldWrite {
  readonly position: number;
  readonly bytes: Buffer;
  /** Ends the write, having written `bytesWritten` of its bytes (default: all). */
  finish(bytesWritten?: number): void;
  fail(cause: Error): void;
}

/** A FileHandle whose writes wait until the test finishes or fails them, one by one. */
const heldFile = () => {
  const writes: HeldWrite[] = [];
  const file = {
    writev: (chunks: ReadonlyArray<Uint8Array>, position: number) =>
      new Promise<{ bytesWritten: number }>((resolve, reject) => {
        const bytes = Buffer.concat(chunks);
        writes.push({
          position,
          bytes,
          finish: (bytesWritten = bytes.length) => resolve({ bytesWritten }),
          fail: reject,
        });
      }),
  } as unknown as FileHandle;
  return { file, writes };
};

/** Lets the writer's promise callbacks run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('BatchWriter', () => {
  const dir = useTempDir('batch-writer');

  it('writes consecutive chunks in place from its offset, a batch once it holds enough, telling each end', async () => {
    const file = await open(path.join(dir.path, 'model.bin'), 'w+');
    const ends: number[] = [];
    const writer = new BatchWriter(file, 4, 3, (end) => ends.push(end), asWriteError);
    try {
      for (const chunk of ['abc', 'defgh', 'i', 'jklmnopq', 'r']) await writer.add(Buffer.from(chunk));
      await writer.flush();
    } finally {
      await file.close();
    }
    expect((await readFile(path.join(dir.path, 'model.bin'))).subarray(3).toString()).toBe(
      'abcdefghijklmnopqr',
    );
    // 'abc' + 'defgh' is the first batch of 4 or more, 'i' + 'jklmnopq' the second, 'r' the flush's.
    expect(ends).toEqual([11, 20, 21]);
  });

  it('keeps gathering while a write runs, and waits only when the next batch is full too', async () => {
    const { file, writes } = heldFile();
    const ends: number[] = [];
    const writer = new BatchWriter(file, 4, 0, (end) => ends.push(end), asWriteError);
    await writer.add(Buffer.from('abcd'));
    expect(writes).toHaveLength(1);
    // The first batch is being written: the next one takes this without waiting.
    await writer.add(Buffer.from('efg'));
    let third = false;
    const adding = writer.add(Buffer.from('hij')).then(() => (third = true));
    await settle();
    expect(third).toBe(false);
    expect(writes).toHaveLength(1);
    writes[0]!.finish();
    await adding;
    expect(ends).toEqual([4]);
    expect(writes.map((w) => [w.position, w.bytes.toString()])).toEqual([
      [0, 'abcd'],
      [4, 'efghij'],
    ]);
    writes[1]!.finish();
    await writer.flush();
    expect(writes).toHaveLength(2);
    expect(ends).toEqual([4, 10]);
  });

  it('writes the rest of a batch a write took only part of, from where that one stopped', async () => {
    const { file, writes } = heldFile();
    const ends: number[] = [];
    const writer = new BatchWriter(file, 6, 10, (end) => ends.push(end), asWriteError);
    await writer.add(Buffer.from('abc'));
    await writer.add(Buffer.from('defgh'));
    const flushing = writer.flush();
    await settle();
    // 4 of 8 bytes: the second chunk is cut in two.
    writes[0]!.finish(4);
    await settle();
    expect(writes.map((w) => [w.position, w.bytes.toString()])).toEqual([
      [10, 'abcdefgh'],
      [14, 'efgh'],
    ]);
    expect(ends).toEqual([]);
    writes[1]!.finish();
    await flushing;
    expect(ends).toEqual([18]);
  });

  it('throws the first failed write as its error, from the next add or the flush, and writes nothing after it', async () => {
    const { file, writes } = heldFile();
    const ends: number[] = [];
    const writer = new BatchWriter(file, 2, 0, (end) => ends.push(end), asWriteError);
    await writer.add(Buffer.from('ab'));
    writes[0]!.fail(new Error('ENOSPC'));
    await writer.add(Buffer.from('c'));
    await expect(writer.add(Buffer.from('d'))).rejects.toThrow('cannot write: Error: ENOSPC');
    await expect(writer.flush()).rejects.toThrow('cannot write: Error: ENOSPC');
    expect(writes).toHaveLength(1);
    expect(ends).toEqual([]);
  });

  it('writes a batch not yet full on flush, so a resume after a cut starts at the next unwritten byte', async () => {
    const file = await open(path.join(dir.path, 'cut.bin'), 'w+');
    let next = 0;
    const writer = new BatchWriter(file, 16, 0, (end) => (next = end), asWriteError);
    try {
      await writer.add(Buffer.from('0123456789'));
      await writer.flush();
    } finally {
      await file.close();
    }
    expect(next).toBe(10);
    expect((await readFile(path.join(dir.path, 'cut.bin'))).toString()).toBe('0123456789');
  });
});
