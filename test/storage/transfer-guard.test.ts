/** Tests of TransferGuard on streams the test feeds and ticks it drives: the byte cap and the sliding-window rate. */
import type { EffectError } from '../../src/core/errors';
import { TransferGuard, type TransferGuardOptions } from '../../src/storage/transfer-guard';
import { effectError } from '../helpers/effect-error';

const what = 'GET http://storage/m.bin';
/** What the CLI calls the cap, as the wiring names it. */
const names = { maxModelBytes: '--max-model-bytes' };

/** A source the test pushes chunks into (or ends), one pull at a time. */
const feed = () => {
  const waiting: Array<(chunk: Uint8Array | undefined) => void> = [];
  const queued: Array<Uint8Array | undefined> = [];
  const push = (chunk: Uint8Array | undefined): void => {
    const taker = waiting.shift();
    if (taker !== undefined) taker(chunk);
    else queued.push(chunk);
  };
  async function* source(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const chunk =
        queued.length > 0
          ? queued.shift()
          : await new Promise<Uint8Array | undefined>((r) => waiting.push(r));
      if (chunk === undefined) return;
      yield chunk;
    }
  }
  return { source: source(), bytes: (n: number) => push(new Uint8Array(n)), end: () => push(undefined) };
};

/** A guard whose ticks the test fires by hand; `stopped` collects what it reported too slow. */
const manualGuard = (options: Omit<TransferGuardOptions, 'what' | 'every' | 'onTooSlow'>) => {
  let tick: (() => void) | undefined;
  let tickEveryMs: number | undefined;
  const stopped: EffectError[] = [];
  const guard = new TransferGuard({
    what,
    ...options,
    onTooSlow: (error) => stopped.push(error),
    every: (ms, run) => {
      tickEveryMs = ms;
      tick = run;
      return () => (tick = undefined);
    },
  });
  return {
    guard,
    stopped,
    tickEveryMs: () => tickEveryMs,
    ticking: () => tick !== undefined,
    tick: (times = 1) => {
      for (let i = 0; i < times; i++) tick?.();
    },
  };
};

/** Pulls every chunk of `stream`, resolving with the bytes seen, or rejecting as the stream does. */
const drain = async (stream: AsyncIterable<Uint8Array>): Promise<number> => {
  let bytes = 0;
  for await (const chunk of stream) bytes += chunk.byteLength;
  return bytes;
};

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('TransferGuard', () => {
  describe('the byte cap', () => {
    it('admits a size up to the cap and refuses one above it, counting nothing', async () => {
      const guard = new TransferGuard({ what, maxBytes: 100, names });
      await expect(guard.admit(100)).resolves.toBeUndefined();
      expect(guard.total).toBe(0);
      await expect(guard.admit(101)).rejects.toMatchObject({
        kind: 'too-large',
        retryable: false,
        message: `${what}: too large: it is 101 bytes, over the cap of 100 bytes (--max-model-bytes)`,
      });
    });

    it('counts every stream against one cap and fails on the chunk that passes it, before handing it on', async () => {
      const guard = new TransferGuard({ what, maxBytes: 100, names });
      expect(await drain(guard.count([new Uint8Array(60)]))).toBe(60);
      await expect(guard.admit(50)).rejects.toThrow(/50 bytes more, over the cap of 100 bytes/);
      const handedOn: number[] = [];
      const error = await effectError(
        (async () => {
          for await (const chunk of guard.count([new Uint8Array(30), new Uint8Array(20)]))
            handedOn.push(chunk.length);
        })(),
      );
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(error.message).toBe(`${what}: too large: it passed the cap of 100 bytes (--max-model-bytes)`);
      expect(handedOn).toEqual([30]);
      expect(guard.total).toBe(110);
    });

    it('passes an empty stream and a source error through unchanged', async () => {
      const guard = new TransferGuard({ what, maxBytes: 10 });
      expect(await drain(guard.count([]))).toBe(0);
      const lost = new Error('connection lost');
      function* breaking(): Generator<Uint8Array> {
        yield new Uint8Array(1);
        throw lost;
      }
      await expect(drain(guard.count(breaking()))).rejects.toBe(lost);
    });
  });

  describe('the minimum rate', () => {
    const minRate = { bytesPerSecond: 1000, windowMs: 1000, name: '--min-download-rate' };

    it('checks every tenth of a window, and says nothing until a whole window has passed', async () => {
      const t = manualGuard({ maxBytes: 1e9, minRate });
      const { source, end } = feed();
      const done = drain(t.guard.count(source));
      await flush();
      expect(t.tickEveryMs()).toBe(100);
      t.tick(9);
      expect(t.stopped).toEqual([]);
      end();
      await done;
    });

    it('stops a stream that moved less than rate × window in the last window, once, retryably', async () => {
      const t = manualGuard({ maxBytes: 1e9, minRate });
      const { source, bytes } = feed();
      const done = drain(t.guard.count(source));
      for (let i = 0; i < 10; i++) {
        bytes(99);
        await flush();
        t.tick();
      }
      expect(t.stopped).toHaveLength(1);
      expect(t.stopped[0]).toMatchObject({ kind: 'timeout', retryable: true });
      expect(t.stopped[0]!.message).toBe(
        `${what} too slow: 990 bytes in the last 1000 ms, below 1000 bytes/s (--min-download-rate)`,
      );
      t.tick(5);
      expect(t.stopped).toHaveLength(1);
      // A chunk that still arrives after the stop fails the stream with the same error.
      bytes(1);
      await expect(done).rejects.toBe(t.stopped[0]);
      expect(t.ticking()).toBe(false);
    });

    it('slides: a fast start does not carry a stream that then slows down', async () => {
      const t = manualGuard({ maxBytes: 1e9, minRate });
      const { source, bytes, end } = feed();
      const done = drain(t.guard.count(source));
      bytes(50_000);
      await flush();
      t.tick(10);
      expect(t.stopped).toEqual([]);
      // Nothing more arrives: the next tick slides the burst out of the window.
      t.tick();
      expect(t.stopped).toHaveLength(1);
      end();
      await done;
    });

    it('keeps a stream at exactly the rate, tick after tick', async () => {
      const t = manualGuard({ maxBytes: 1e9, minRate });
      const { source, bytes, end } = feed();
      const done = drain(t.guard.count(source));
      for (let i = 0; i < 50; i++) {
        bytes(100);
        await flush();
        t.tick();
      }
      expect(t.stopped).toEqual([]);
      end();
      expect(await done).toBe(5000);
    });

    it.each([
      ['no minimum', undefined],
      ['a minimum of 0 bytes/s', { bytesPerSecond: 0, windowMs: 1000 }],
    ])('starts no timer with %s', async (_label, rate) => {
      const t = manualGuard({ maxBytes: 1e9, ...(rate === undefined ? {} : { minRate: rate }) });
      const done = drain(t.guard.count([new Uint8Array(1)]));
      expect(t.ticking()).toBe(false);
      await done;
    });

    it('stops its timer when the stream ends, fails or is abandoned', async () => {
      const t = manualGuard({ maxBytes: 10, minRate });
      const { source, bytes } = feed();
      const done = drain(t.guard.count(source));
      await flush();
      expect(t.ticking()).toBe(true);
      bytes(11);
      await expect(done).rejects.toMatchObject({ kind: 'too-large' });
      expect(t.ticking()).toBe(false);

      const fresh = manualGuard({ maxBytes: 10, minRate });
      const abandoned = fresh.guard.count([new Uint8Array(1), new Uint8Array(1)]);
      await abandoned.next();
      expect(fresh.ticking()).toBe(true);
      await abandoned.return(undefined);
      expect(fresh.ticking()).toBe(false);
    });

    it('measures streams read at once (objects in flight) on one timer, over their sum, until the last ends', async () => {
      const timers: Array<() => void> = [];
      let running = 0;
      const stopped: EffectError[] = [];
      const guard = new TransferGuard({
        what,
        maxBytes: 100_000,
        minRate,
        onTooSlow: (error) => stopped.push(error),
        every: (_ms, run) => {
          timers.push(run);
          running += 1;
          return () => (running -= 1);
        },
      });
      const first = feed();
      const second = feed();
      const done = [drain(guard.count(first.source)), drain(guard.count(second.source))];
      await flush();
      expect([timers.length, running]).toEqual([1, 1]);
      // 600 + 500 bytes per window: the sum passes the 1000 the rate asks; either stream alone would not.
      for (let i = 0; i < 20; i++) {
        first.bytes(60);
        second.bytes(50);
        await flush();
        timers[0]!();
      }
      expect(stopped).toEqual([]);
      first.end();
      await expect(done[0]).resolves.toBe(1200);
      expect(running).toBe(1);
      second.end();
      await expect(done[1]).resolves.toBe(1000);
      expect(running).toBe(0);
    });
  });
});
