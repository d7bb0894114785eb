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
});
