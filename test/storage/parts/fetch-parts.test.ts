/** Tests of fetchInParts' choice of connections: a first connection fast enough alone fetches the whole file. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fetchInParts, type PartsJob } from '../../../src/storage/parts/fetch-parts';
import { TransferGuard } from '../../../src/storage/transfer-guard';
import { useTempDir } from '../../helpers/temp-dir';

const MiB = 2 ** 20;
const size = 40 * MiB;
const data = Buffer.alloc(size);
for (let at = 0; at < size; at += 4096) data.writeUInt32LE(at, at);

/** A store in memory: every read it was asked for, each body in 64 KiB chunks, `delayMs` apart. */
const memoryReads = (delayMs: number) => {
  const reads: Array<readonly [number, number]> = [];
  const read: PartsJob['read'] = (start, end) => {
    reads.push([start, end]);
    return Promise.resolve(
      (async function* () {
        for (let at = start; at < end; at += 64 * 1024) {
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          yield data.subarray(at, Math.min(end, at + 64 * 1024));
        }
      })(),
    );
  };
  return { read, reads };
};

describe('fetchInParts', () => {
  const tmp = useTempDir('fetch-parts');
  const job = (read: PartsJob['read'], name: string): PartsJob => ({
    what: 'test',
    size,
    to: path.join(tmp.path, name),
    read,
    signal: new AbortController().signal,
    guard: new TransferGuard({ what: 'test', maxBytes: size }),
    resumable: () => false,
  });

  it('fetches the whole file over its first connection alone when that one brings enough soon enough', async () => {
    const store = memoryReads(0);
    await fetchInParts(job(store.read, 'fast.bin'), {
      streams: 8,
      oneStream: { bytes: MiB, withinMs: 60_000 },
    });
    expect((await readFile(path.join(tmp.path, 'fast.bin'))).equals(data)).toBe(true);
    // The first range, then the rest of the file in one read: no second connection opened.
    expect(store.reads).toEqual([
      [0, 4 * MiB],
      [4 * MiB, size],
    ]);
  });

  it('opens its other connections when the first one is slower than that', async () => {
    // 64 KiB every 5 ms: 13 MB/s, far from 1 MiB in 20 ms.
    const store = memoryReads(5);
    await fetchInParts(job(store.read, 'slow.bin'), { streams: 4, oneStream: { bytes: MiB, withinMs: 20 } });
    expect((await readFile(path.join(tmp.path, 'slow.bin'))).equals(data)).toBe(true);
    expect(store.reads.length).toBeGreaterThanOrEqual(4);
    expect(store.reads.every(([start, end]) => end - start <= 5 * MiB)).toBe(true);
  });
});
