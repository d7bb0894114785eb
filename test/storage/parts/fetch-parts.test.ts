/** Tests of fetchInParts' choice of connections: a first connection fast enough alone fetches the whole file. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { FlowingBody } from '../../../src/net';
import { fetchInParts, type PartsJob } from '../../../src/storage/parts/fetch-parts';
import { TransferGuard } from '../../../src/storage/transfer-guard';
import { httpStatusError } from '../../../src/core/errors';
import { isPushback, StorePressure } from '../../../src/storage/store-pressure';
import { waitFor } from '../../../src/testing/wait';
import { useTempDir } from '../../helpers/temp-dir';

const MiB = 2 ** 20;
const size = 40 * MiB;
const data = Buffer.alloc(size);
for (let at = 0; at < size; at += 4096) data.writeUInt32LE(at, at);

/**
 * A store in memory: every read it was asked for, and the most bodies read at once. Each body comes in 64 KiB
 * chunks, one per turn of the event loop, or `delayMs` apart; past `held.afterBytes` of the file, only once
 * `held.until` has resolved.
 */
const memoryReads = (
  delayMs: number,
  held?: { readonly afterBytes: number; readonly until: Promise<void> },
) => {
  const reads: Array<readonly [number, number]> = [];
  const bodies = { open: 0, most: 0 };
  const read: PartsJob['read'] = (start, end) => {
    reads.push([start, end]);
    return Promise.resolve(
      (async function* () {
        bodies.most = Math.max(bodies.most, ++bodies.open);
        try {
          for (let at = start; at < end; at += 64 * 1024) {
            await new Promise((resolve) =>
              delayMs > 0 ? setTimeout(resolve, delayMs) : setImmediate(resolve),
            );
            if (held !== undefined && at >= held.afterBytes) await held.until;
            yield data.subarray(at, Math.min(end, at + 64 * 1024));
          }
        } finally {
          bodies.open--;
        }
      })(),
    );
  };
  return { read, reads, bodies };
};

/**
 * The one-stream rule's clock, in the test's hands: it stands at `time` until the test moves it, and counts its
 * reads (the rule reads it once each time it looks).
 */
const steppedClock = () => {
  const clock = {
    time: 0,
    reads: 0,
    now: (): number => {
      clock.reads++;
      return clock.time;
    },
    /** Moves the clock to `time`; resolves once the rule has read it twice (acted on it once, then looked again). */
    moveTo: async (time: number): Promise<void> => {
      clock.time = time;
      const before = clock.reads;
      await waitFor(() => clock.reads >= before + 2, 10_000, `the rule to read the clock at ${time} ms`);
    },
  };
  return clock;
};

/**
 * A store whose bodies flow as undici's do (FlowingBody): chunks of 48 KiB pushed one per turn of the event loop, each
 * taken in the Readable's 'data' as it comes, never iterated.
 */
const flowingReads = () => {
  const reads: Array<readonly [number, number]> = [];
  const bodies = { open: 0, most: 0, ended: 0, stopped: 0, landed: 0 };
  const read: PartsJob['read'] = (start, end) => {
    reads.push([start, end]);
    bodies.most = Math.max(bodies.most, ++bodies.open);
    let at = start;
    const readable = new Readable({
      read() {
        setImmediate(() => {
          if (at >= end) return void this.push(null);
          const bytes = Math.min(end - at, 48 * 1024);
          bodies.landed += bytes;
          this.push(data.subarray(at, (at += bytes)));
        });
      },
    });
    readable.once('close', () => {
      bodies.open--;
      if (readable.readableEnded) bodies.ended++;
      else bodies.stopped++;
    });
    const body: FlowingBody = {
      readable,
      failure: (cause) => cause,
      [Symbol.asyncIterator]: () => {
        throw new Error('a flowing body is not iterated');
      },
    };
    return Promise.resolve(body);
  };
  return { read, reads, bodies };
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
    // The rule's clock stands still: the first connection brings its 1 MiB within the window, however slow the host.
    await fetchInParts(job(store.read, 'fast.bin'), {
      streams: 8,
      oneStream: { bytes: MiB, withinMs: 60 },
      now: () => 0,
    });
    expect((await readFile(path.join(tmp.path, 'fast.bin'))).equals(data)).toBe(true);
    // One connection: one body at a time, each read starting where the last ended. The range it was on when the
    // rule held took the rest of the file, so it read in fewer reads than the 10 ranges of 4 MiB.
    expect(store.bodies.most).toBe(1);
    store.reads.forEach(([start], i) => expect(start).toBe(i === 0 ? 0 : store.reads[i - 1]![1]));
    expect(store.reads.at(-1)![1]).toBe(size);
    expect(store.reads.length).toBeLessThan(size / (4 * MiB));
  });

  it('writes no byte past the range a read asked for, though its range took the rest of the file meanwhile', async () => {
    // Each answer brings its range, then runs on with bytes that are not the file's (a close-delimited 206).
    const reads: Array<readonly [number, number]> = [];
    const read: PartsJob['read'] = (start, end) => {
      reads.push([start, end]);
      return Promise.resolve(
        (async function* () {
          for (let at = start; at < end; at += 64 * 1024) {
            await new Promise((resolve) => setImmediate(resolve));
            yield data.subarray(at, Math.min(end, at + 64 * 1024));
          }
          yield Buffer.alloc(MiB, 'p');
        })(),
      );
    };
    await fetchInParts(job(read, 'overrun.bin'), {
      streams: 8,
      oneStream: { bytes: MiB, withinMs: 60 },
      now: () => 0,
    });
    expect((await readFile(path.join(tmp.path, 'overrun.bin'))).equals(data)).toBe(true);
    // The range the rule held on took the rest of the file: its next read asked for that rest.
    expect(reads.at(-1)![1]).toBe(size);
  });

  it('closes the connections a push-back crowds out, their ranges fetched whole by the others', async () => {
    // A store of two answers at once: a read past them is pushed back (503, Retry-After 30 ms).
    const store = memoryReads(1);
    const pushedAt: number[] = [];
    let answering = 0;
    const read: PartsJob['read'] = async (start, end, signal) => {
      if (answering >= 2) {
        pushedAt.push(performance.now());
        throw httpStatusError('GET test', 503, 'SlowDown', 30);
      }
      answering++;
      const body = await store.read(start, end, signal);
      return (async function* () {
        try {
          yield* body;
        } finally {
          answering--;
        }
      })();
    };
    const pressure = new StorePressure({ baseMs: 30, maxMs: 100, maxAttempts: 8 });
    await fetchInParts(
      { ...job(read, 'pushed.bin'), resumable: isPushback },
      { streams: 4, oneStream: null, pressure },
    );
    expect((await readFile(path.join(tmp.path, 'pushed.bin'))).equals(data)).toBe(true);
    // The connections past the store's two closed at their push-back: 2 here; left open, each retried after every
    // pause, 13.
    expect(pushedAt.length).toBeGreaterThan(0);
    expect(pushedAt.length).toBeLessThanOrEqual(4);
  });

  it('opens its other connections when the first one is slower than that', async () => {
    // 64 KiB every 5 ms at most (a new timer each): 13 MB/s, far from 1 MiB in 20 ms; a slow host only slows it.
    const store = memoryReads(5);
    await fetchInParts(job(store.read, 'slow.bin'), { streams: 4, oneStream: { bytes: MiB, withinMs: 20 } });
    expect((await readFile(path.join(tmp.path, 'slow.bin'))).equals(data)).toBe(true);
    expect(store.reads.length).toBeGreaterThanOrEqual(4);
    expect(store.bodies.most).toBeGreaterThan(1);
    expect(store.reads.every(([start, end]) => end - start <= 5 * MiB)).toBe(true);
  });

  it('opens them once half the wait has passed with the first one at under half the pace asked for', async () => {
    // A rule of 80 MiB in 2 s (40 MiB/s) on the test's clock. The first connection brings 1 MiB, then nothing until
    // the others are open: at 1 s it has not half that pace, and cannot make it.
    const clock = steppedClock();
    let release = (): void => undefined;
    const store = memoryReads(0, { afterBytes: MiB, until: new Promise((resolve) => (release = resolve)) });
    // The clock when each read began while another body was open: the reads of the further connections.
    const alongside: number[] = [];
    const read: PartsJob['read'] = (start, end, signal) => {
      if (store.bodies.open > 0) alongside.push(clock.time);
      return store.read(start, end, signal);
    };
    const stop = new AbortController();
    const fetching = fetchInParts(
      { ...job(read, 'early.bin'), signal: stop.signal },
      { streams: 4, oneStream: { bytes: 2 * size, withinMs: 2_000 }, now: clock.now },
    );
    try {
      await waitFor(() => clock.reads > 0, 10_000, 'the rule to start its window');
      await clock.moveTo(999);
      expect(alongside).toEqual([]);
      clock.time = 1_000;
      await waitFor(() => alongside.length > 0, 10_000, 'a second connection');
    } catch (cause) {
      // On a clock that stands still, the rule of a failed test would look for ever: the download is stopped.
      stop.abort();
      void fetching.catch(() => undefined);
      throw cause;
    } finally {
      release();
    }
    await fetching;
    expect((await readFile(path.join(tmp.path, 'early.bin'))).equals(data)).toBe(true);
    expect(store.bodies.most).toBeGreaterThan(1);
    // The second connection's first read: at half the window, not at its end (2 s).
    expect(alongside[0]).toBe(1_000);
  });

  it('reads flowing bodies byte-exact, each range to its end', async () => {
    const store = flowingReads();
    await fetchInParts(job(store.read, 'direct.bin'), { streams: 4 });
    expect((await readFile(path.join(tmp.path, 'direct.bin'))).equals(data)).toBe(true);
    expect(store.bodies.ended + store.bodies.stopped).toBe(store.reads.length);
  });

  it('opens every connection at once when the settings give no one-stream rule', async () => {
    // As fast as the store that stays on one connection under the rule (the first test), on a clock that stands
    // still as there: under a rule, the first connection would bring its 6 MiB and keep the file to itself.
    const store = flowingReads();
    // Bytes landed when each read began.
    const landedAt: number[] = [];
    const read: PartsJob['read'] = (start, end, signal) => {
      landedAt.push(store.bodies.landed);
      return store.read(start, end, signal);
    };
    await fetchInParts(job(read, 'all-at-once.bin'), { streams: 4, oneStream: null, now: () => 0 });
    expect((await readFile(path.join(tmp.path, 'all-at-once.bin'))).equals(data)).toBe(true);
    expect(store.bodies.most).toBe(4);
    // The four connections' first reads all began before any body brought a byte: nothing was waited for.
    expect(landedAt.slice(0, 4)).toEqual([0, 0, 0, 0]);
  });

  it('fails a range after 3 resumes in a row that each bring less than 1 MiB, not one read per few bytes', async () => {
    const reads: number[] = [];
    const cut = new Error('cut');
    // Every read brings 10 KiB of its range, then breaks: a peer that cuts each answer early.
    const read: PartsJob['read'] = (start) => {
      reads.push(start);
      return Promise.resolve(
        (async function* () {
          yield data.subarray(start, start + 10 * 1024);
          await Promise.resolve();
          throw cut;
        })(),
      );
    };
    const failing = fetchInParts(
      { ...job(read, 'cut.bin'), resumable: (cause) => cause === cut },
      { streams: 2 },
    );

    await expect(failing).rejects.toBe(cut);
    // Each of the 2 connections reads a range, then resumes it 3 times at most: 8 reads, never one per 10 KiB.
    expect(reads.length).toBeLessThanOrEqual(2 * (1 + 3));
  });
});
