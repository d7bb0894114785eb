/** Tests of BatchWriter: bytes land in place through two buffers, one written while the other fills, failures kept. */
import { open, readFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { BatchWriter } from '../../../src/storage/parts/batch-writer';
import { fileWrites } from '../../../src/storage/parts/file-writes';
import { useTempDir } from '../../helpers/temp-dir';

const buffers = (bytes: number) => [Buffer.alloc(bytes), Buffer.alloc(bytes)] as const;
const asWriteError = (cause: unknown) => new Error(`cannot write: ${String(cause)}`);

interface HeldWrite {
  readonly position: number;
  readonly bytes: Buffer;
  finish(): void;
  fail(cause: Error): void;
}

/** A FileHandle whose writes wait until the test finishes or fails them, one by one. */
const heldFile = () => {
  const writes: HeldWrite[] = [];
  const file = {
    write: (buffer: Buffer, offset: number, length: number, position: number) =>
      new Promise<{ bytesWritten: number }>((resolve, reject) => {
        writes.push({
          position,
          bytes: Buffer.from(buffer.subarray(offset, offset + length)),
          finish: () => resolve({ bytesWritten: length }),
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

  it('writes consecutive chunks in place from its offset, across buffers, telling each contiguous end', async () => {
    const file = await open(path.join(dir.path, 'model.bin'), 'w+');
    const ends: number[] = [];
    const writer = new BatchWriter(
      fileWrites(file, null),
      buffers(4),
      3,
      (end) => ends.push(end),
      asWriteError,
    );
    try {
      for (const chunk of ['abc', 'defgh', 'i', 'jklmnopq']) await writer.add(Buffer.from(chunk));
      await writer.flush();
    } finally {
      await file.close();
    }
    expect((await readFile(path.join(dir.path, 'model.bin'))).subarray(3).toString()).toBe(
      'abcdefghijklmnopq',
    );
    expect(ends).toEqual([7, 11, 15, 19, 20]);
  });

  it('keeps filling the other buffer while a write runs, and waits only when both are taken', async () => {
    const { file, writes } = heldFile();
    const ends: number[] = [];
    const writer = new BatchWriter(fileWrites(file), buffers(4), 0, (end) => ends.push(end), asWriteError);
    await writer.add(Buffer.from('abcd'));
    expect(writes).toHaveLength(1);
    // The first buffer is being written: the second one takes these without waiting.
    await writer.add(Buffer.from('efg'));
    let third = false;
    const adding = writer.add(Buffer.from('hij'))!.then(() => (third = true));
    await settle();
    expect(third).toBe(false);
    expect(writes).toHaveLength(1);
    writes[0]!.finish();
    await adding;
    expect(ends).toEqual([4]);
    expect(writes.map((w) => [w.position, w.bytes.toString()])).toEqual([
      [0, 'abcd'],
      [4, 'efgh'],
    ]);
    writes[1]!.finish();
    const flushing = writer.flush();
    await settle();
    writes[2]!.finish();
    await flushing;
    expect(writes[2]!.bytes.toString()).toBe('ij');
    expect(ends).toEqual([4, 8, 10]);
  });

  it('throws the first failed write as its error, from the next add or the flush, and writes nothing after it', async () => {
    const { file, writes } = heldFile();
    const ends: number[] = [];
    const writer = new BatchWriter(fileWrites(file), buffers(2), 0, (end) => ends.push(end), asWriteError);
    await writer.add(Buffer.from('ab'));
    writes[0]!.fail(new Error('ENOSPC'));
    await writer.add(Buffer.from('c'));
    await expect(writer.add(Buffer.from('d'))).rejects.toThrow('cannot write: Error: ENOSPC');
    await expect(writer.flush()).rejects.toThrow('cannot write: Error: ENOSPC');
    expect(writes).toHaveLength(1);
    expect(ends).toEqual([]);
  });

  it('writes a partly filled buffer on flush, so a resume after a cut starts at the next unwritten byte', async () => {
    const file = await open(path.join(dir.path, 'cut.bin'), 'w+');
    let next = 0;
    const writer = new BatchWriter(
      fileWrites(file, null),
      buffers(8),
      0,
      (end) => (next = end),
      asWriteError,
    );
    try {
      await writer.add(Buffer.from('0123456789'));
      await writer.flush();
    } finally {
      await file.close();
    }
    expect(next).toBe(10);
    expect((await readFile(path.join(dir.path, 'cut.bin'))).toString()).toBe('0123456789');
  });

  it('starts a full buffer’s write at once, and asks the reader to wait only while both buffers are taken', async () => {
    const { file, writes } = heldFile();
    const ends: number[] = [];
    const writer = new BatchWriter(fileWrites(file), buffers(4), 10, (end) => ends.push(end), asWriteError);
    expect(writer.add(Buffer.from('abc'))).toBeUndefined();
    // Full, with no write running: it starts now, and the reader need not wait.
    expect(writer.add(Buffer.from('d'))).toBeUndefined();
    expect(writes.map((w) => [w.position, w.bytes.toString()])).toEqual([[10, 'abcd']]);
    // The other buffer is full too while the first write runs: the reader waits for it.
    const waiting = writer.add(Buffer.from('efgh'));
    expect(waiting).toBeInstanceOf(Promise);
    let waited = false;
    void waiting!.then(() => (waited = true));
    await settle();
    expect(waited).toBe(false);
    writes[0]!.finish();
    await waiting;
    expect(writes.map((w) => [w.position, w.bytes.toString()])).toEqual([
      [10, 'abcd'],
      [14, 'efgh'],
    ]);
    writes[1]!.finish();
    await writer.flush();
    expect(ends).toEqual([14, 18]);
  });

  it('rejects the reader’s wait with the first failed write', async () => {
    const { file, writes } = heldFile();
    const writer = new BatchWriter(fileWrites(file), buffers(2), 0, () => undefined, asWriteError);
    expect(writer.add(Buffer.from('ab'))).toBeUndefined();
    const waiting = writer.add(Buffer.from('cd'));
    writes[0]!.fail(new Error('EIO'));
    await expect(waiting).rejects.toThrow('cannot write: Error: EIO');
    expect(writes).toHaveLength(1);
  });
});

describe('fileWrites', () => {
  const dir = useTempDir('file-writes');

  it('starts each thread-pool write once the one before it has settled, in the order asked, failed or not', async () => {
    const { file, writes } = heldFile();
    const serial = fileWrites(file);
    const first = serial.write(Buffer.from('a'), 0, 1, 0);
    const second = serial.write(Buffer.from('b'), 0, 1, 1);
    const third = serial.write(Buffer.from('c'), 0, 1, 2);
    await settle();
    expect(writes.map((w) => w.bytes.toString())).toEqual(['a']);
    writes[0]!.fail(new Error('EIO'));
    await expect(first).rejects.toThrow('EIO');
    await settle();
    expect(writes.map((w) => w.bytes.toString())).toEqual(['a', 'b']);
    writes[1]!.finish();
    await expect(second).resolves.toEqual({ bytesWritten: 1 });
    await settle();
    writes[2]!.finish();
    await expect(third).resolves.toEqual({ bytesWritten: 1 });
    expect(writes.map((w) => w.position)).toEqual([0, 1, 2]);
  });

  it('writes inline while writes are quick, and a file without a descriptor never does', () => {
    expect(fileWrites(heldFile().file).inline(Buffer.from('a'), 0, 1, 0)).toBe(false);
  });

  it('keeps writing inline after slow writes that together stay within the limit', async () => {
    const file = await open(path.join(dir.path, 'budget.bin'), 'w+');
    try {
      // Every write is slow (over a nanosecond); together they stay under a minute.
      const writes = fileWrites(file, { slowMs: 1e-6, slowTotalMs: 60_000 });
      for (let at = 0; at < 5; at++) expect(writes.inline(Buffer.from('x'), 0, 1, at)).toBe(true);
    } finally {
      await file.close();
    }
    expect((await readFile(path.join(dir.path, 'budget.bin'))).toString()).toBe('xxxxx');
  });
});

describe('BatchWriter with inline writes', () => {
  const dir = useTempDir('batch-writer-inline');

  it('writes each chunk at once, gathering nothing, telling each end', async () => {
    const file = await open(path.join(dir.path, 'inline.bin'), 'w+');
    const ends: number[] = [];
    try {
      const writer = new BatchWriter(fileWrites(file), buffers(4), 2, (end) => ends.push(end), asWriteError);
      for (const chunk of ['abc', 'de', 'f']) expect(writer.add(Buffer.from(chunk))).toBeUndefined();
      await writer.add(Buffer.from('ghijk'));
      await writer.flush();
    } finally {
      await file.close();
    }
    expect((await readFile(path.join(dir.path, 'inline.bin'))).subarray(2).toString()).toBe('abcdefghijk');
    expect(ends).toEqual([5, 7, 8, 13]);
  });

  it('goes on through the thread pool once its slow writes together took longer than the limit', async () => {
    const file = await open(path.join(dir.path, 'slow.bin'), 'w+');
    const ends: number[] = [];
    try {
      // Every write takes longer than a nanosecond: the first is inline, then inline writes are off for the file.
      const writes = fileWrites(file, { slowMs: 1e-6, slowTotalMs: 0 });
      const writer = new BatchWriter(writes, buffers(4), 0, (end) => ends.push(end), asWriteError);
      for (const chunk of ['ab', 'cdef', 'gh']) await writer.add(Buffer.from(chunk));
      expect(writes.inline(Buffer.from('x'), 0, 1, 100)).toBe(false);
      await writer.flush();
    } finally {
      await file.close();
    }
    expect((await readFile(path.join(dir.path, 'slow.bin'))).toString()).toBe('abcdefgh');
    expect(ends).toEqual([2, 6, 8]);
  });

  it('throws a failed inline write as its error, and every later call with it', async () => {
    const file = await open(path.join(dir.path, 'closed.bin'), 'w+');
    const writes = fileWrites({ write: file.write.bind(file), fd: file.fd });
    await file.close();
    const writer = new BatchWriter(writes, buffers(4), 0, () => undefined, asWriteError);
    expect(() => writer.add(Buffer.from('ab'))).toThrow('cannot write: Error: EBADF');
    await expect(writer.add(Buffer.from('c'))).rejects.toThrow('cannot write: Error: EBADF');
    await expect(writer.flush()).rejects.toThrow('cannot write: Error: EBADF');
  });
});
