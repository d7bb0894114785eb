/** boundedDestination: lines to a stream that stops taking them are dropped and counted, never queued without end. */
import { Writable } from 'node:stream';
import { boundedDestination } from '../../src/log/logger';

/** A stream that takes writes only when `release` is called (a pipe whose reader stopped, then came back). */
const stuckStream = () => {
  const written: string[] = [];
  const pending: Array<() => void> = [];
  const stream = new Writable({
    highWaterMark: 16,
    write: (chunk: Buffer, _encoding, callback) => {
      written.push(chunk.toString());
      pending.push(callback);
    },
  });
  const release = async (): Promise<void> => {
    while (pending.length > 0) pending.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { stream, written, release };
};

describe('boundedDestination', () => {
  it('writes every line while the stream takes them', async () => {
    const { stream, written, release } = stuckStream();
    const destination = boundedDestination(stream, undefined, 1000);
    destination.write('a\n');
    await release();
    destination.write('b\n');
    await release();
    expect(written).toEqual(['a\n', 'b\n']);
    expect(destination.dropped()).toBe(0);
  });

  it('drops lines past the bound while the stream is stuck, and says how many once it drains', async () => {
    const { stream, written, release } = stuckStream();
    const resumed: number[] = [];
    const destination = boundedDestination(stream, (count) => resumed.push(count), 30);
    for (let i = 0; i < 10; i++) destination.write(`line ${i}\n`);
    expect(destination.dropped()).toBe(6);
    expect(resumed).toEqual([]);
    await release();
    await release();
    expect(resumed).toEqual([6]);
    expect(written.join('')).toBe('line 0\nline 1\nline 2\nline 3\n');
  });

  it('stops waiting for a stream that never drains after the bound, and at once for a drained one', async () => {
    const { stream, release } = stuckStream();
    const destination = boundedDestination(stream, undefined, 1000);
    await destination.flushed(0);
    destination.write('stuck\n');
    destination.write('stuck\n');
    const flushed = destination.flushed(50);
    await expect(flushed).resolves.toBeUndefined();
    await release();
  });

  it('hands the lines of one event-loop turn to the stream in one write, and a later turn its own', async () => {
    const writes: string[][] = [];
    const stream = new Writable({
      writev: (chunks, callback) => {
        writes.push(chunks.map(({ chunk }) => String(chunk)));
        callback();
      },
    });
    const destination = boundedDestination(stream);
    destination.write('a\n');
    destination.write('b\n');
    destination.write('c\n');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    destination.write('d\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([['a\n', 'b\n', 'c\n'], ['d\n']]);
  });

  it('writes the lines of a turn as they come once they fill a pipe buffer (64 KiB)', () => {
    const writes: number[] = [];
    const stream = new Writable({
      writev: (chunks, callback) => {
        writes.push(chunks.length);
        callback();
      },
      write: (_chunk, _encoding, callback) => {
        writes.push(1);
        callback();
      },
    });
    const destination = boundedDestination(stream);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) destination.write(line);
    expect(writes).toEqual([64]);
  });

  it('flushed waits for the lines of this turn to be written, a slow write too, below the high-water mark', async () => {
    const written: string[] = [];
    const stream = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        setTimeout(() => {
          written.push(chunk.toString());
          callback();
        }, 20);
      },
    });
    const destination = boundedDestination(stream);
    destination.write('last words\n');
    await destination.flushed(10_000);
    expect(written.join('')).toBe('last words\n');
  });
});
