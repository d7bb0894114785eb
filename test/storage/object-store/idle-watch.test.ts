/** idleChunks: a body handed out before anyone reads it, cut meanwhile, fails its first read and never the process. */
import { Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { idleChunks } from '../../../src/storage/object-store/idle-watch';

const never = new AbortController().signal;
const read = async (chunks: AsyncIterable<Uint8Array>): Promise<number> => {
  let bytes = 0;
  for await (const chunk of chunks) bytes += chunk.byteLength;
  return bytes;
};

describe('idleChunks', () => {
  it('hands on every chunk of a body that ends', async () => {
    const body = Readable.from([Buffer.from('abc'), Buffer.from('de')]);
    expect(await read(idleChunks(body, 1_000, 'reading m', never, (cause) => cause))).toBe(5);
  });

  it('fails the first read, through `failure`, when the body was cut before it was read (no uncaught error)', async () => {
    const body = new Readable({ read() {} });
    const chunks = idleChunks(
      body,
      1_000,
      'reading m',
      never,
      (cause) => new Error(`failed: ${String(cause)}`),
    );
    const uncaught = jest.fn();
    process.on('uncaughtException', uncaught);
    try {
      body.destroy(new Error('connection lost'));
      await tick();
      await expect(read(chunks)).rejects.toThrow('failed: Error: connection lost');
      expect(uncaught).not.toHaveBeenCalled();
    } finally {
      process.off('uncaughtException', uncaught);
    }
  });

  it('fails as a timeout naming the wait when no byte comes for the deadline', async () => {
    const body = new Readable({ read() {} });
    await expect(read(idleChunks(body, 20, 'reading m', never, (cause) => cause))).rejects.toThrow(
      'no data received for 20 ms',
    );
    expect(body.destroyed).toBe(true);
  });
});
