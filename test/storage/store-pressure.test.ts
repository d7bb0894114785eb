/** Tests of StorePressure on a stepped clock: a push-back halves the connections and pauses every request. */
import { EffectError, httpStatusError, retryableError, retryAfterOf } from '../../src/core/errors';
import { isPushback, StorePressure, storePressures } from '../../src/storage/store-pressure';

const slowDown = (retryAfterMs?: number): EffectError =>
  httpStatusError('GET s3://b/k', 503, 'SlowDown', retryAfterMs);

/** The longest wait of the policy the tests give: 1 s doubling to 30 s, 8 push-backs in a row. */
const maxPauseMs = 30_000;

/** A pressure on a clock the test moves; `random` 0.5 (the waits' jitter). */
const stepped = () => {
  const clock = { ms: 0 };
  const pressure = new StorePressure(
    { baseMs: 1000, maxMs: maxPauseMs, maxAttempts: 8 },
    () => clock.ms,
    () => 0.5,
  );
  return { clock, pressure };
};

describe('StorePressure', () => {
  it('tells a push-back: HTTP 429 and 503, not other failures', () => {
    expect(isPushback(httpStatusError('GET x', 429))).toBe(true);
    expect(isPushback(slowDown())).toBe(true);
    expect(isPushback(httpStatusError('GET x', 500))).toBe(false);
    expect(isPushback(retryableError('network', 'reset'))).toBe(false);
    expect(isPushback(new Error('503'))).toBe(false);
  });

  it('times its pause on a clock that never steps: the wall clock set back an hour mid-pause adds nothing', () => {
    jest.useFakeTimers();
    try {
      const pressure = new StorePressure({ baseMs: 20, maxMs: 20, maxAttempts: 8 });
      pressure.pushedBack(slowDown());
      expect(pressure.roomy).toBe(false);
      jest.setSystemTime(Date.now() - 3_600_000); // NTP steps the wall clock; performance.now() does not move
      jest.advanceTimersByTime(25);
      expect(pressure.roomy).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('halves the connections open at a push-back, never under one, and adds one back a round of answers later', () => {
    const { clock, pressure } = stepped();
    /** A push-back once the last one's pause has passed. */
    const pushBack = (): void => {
      clock.ms += maxPauseMs;
      pressure.pushedBack(slowDown());
    };
    const closes = Array.from({ length: 8 }, () => pressure.open());
    expect(pressure.limit).toBe(Infinity);
    pushBack();
    expect(pressure.limit).toBe(4);
    expect(pressure.crowded).toBe(true);
    // The answers to requests sent before it (a burst): no more halving.
    pressure.pushedBack(slowDown());
    pressure.pushedBack(slowDown());
    expect(pressure.limit).toBe(4);
    closes.splice(0, 4).forEach((close) => close());
    expect(pressure.crowded).toBe(false);
    pushBack();
    pushBack();
    pushBack();
    expect(pressure.limit).toBe(1);
    // One more connection a round: after one answer at 1, after two at 2.
    pressure.answered();
    expect(pressure.limit).toBe(2);
    pressure.answered();
    expect(pressure.limit).toBe(2);
    pressure.answered();
    expect(pressure.limit).toBe(3);
  });

  it("pauses for the store's Retry-After, else the policy's wait, never under its base nor over its longest", () => {
    const { clock, pressure } = stepped();
    const pausedFor = (): number => {
      let ms = 0;
      while (!pressure.roomy && ms < 10 * maxPauseMs) {
        clock.ms += 10;
        ms += 10;
      }
      return ms;
    };
    const waits = [1, 2, 3, 4, 5, 6, 7].map(() => {
      pressure.pushedBack(slowDown());
      return pausedFor();
    });
    // Jittered at 0.5 of a ceiling that doubles, never under the 1 s base.
    expect(waits).toEqual([1000, 1000, 2000, 4000, 8000, 15000, 15000]);
    pressure.answered();
    pressure.pushedBack(slowDown(2500));
    expect(pausedFor()).toBe(2500);
    pressure.pushedBack(slowDown(3600_000));
    expect(pausedFor()).toBe(maxPauseMs);
  });

  it('pauses at least its base for a Retry-After of 0 or a date in the past: never a tight retry', () => {
    const { clock, pressure } = stepped();
    const pausedFor = (): number => {
      let ms = 0;
      for (; !pressure.roomy && ms < 10 * maxPauseMs; ms += 10) clock.ms += 10;
      return ms;
    };
    pressure.pushedBack(slowDown(retryAfterOf('0')));
    expect(pausedFor()).toBe(1000);
    pressure.answered();
    pressure.pushedBack(slowDown(retryAfterOf('Wed, 21 Oct 2015 07:28:00 GMT')));
    expect(pausedFor()).toBe(1000);
  });

  it("asks again after each push-back up to the policy's attempts, then throws the last", async () => {
    const pressure = new StorePressure({ baseMs: 5, maxMs: 10, maxAttempts: 3 });
    let asked = 0;
    const pushBack = () => Promise.reject(slowDown(5)).finally(() => asked++);
    await expect(pressure.askThroughPushbacks(new AbortController().signal, pushBack)).rejects.toMatchObject({
      status: 503,
    });
    expect(asked).toBe(4);
    let answered = 0;
    const twiceThenAnswer = () => (++answered <= 2 ? Promise.reject(slowDown(5)) : Promise.resolve('bytes'));
    expect(await pressure.askThroughPushbacks(new AbortController().signal, twiceThenAnswer)).toBe('bytes');
  });

  it('holds a request until the pause has passed, and tells its answer or its push-back', async () => {
    const pressure = new StorePressure();
    pressure.pushedBack(slowDown(150));
    const started = performance.now();
    const asked: number[] = [];
    await pressure.ask(new AbortController().signal, () => Promise.resolve(asked.push(performance.now())));
    expect(asked[0]! - started).toBeGreaterThanOrEqual(140);
    await expect(
      pressure.ask(new AbortController().signal, () => Promise.reject(slowDown(100))),
    ).rejects.toMatchObject({ status: 503 });
    expect(pressure.roomy).toBe(false);
    const aborted = AbortSignal.abort(new Error('superseded'));
    await expect(pressure.ask(aborted, () => Promise.resolve(1))).rejects.toMatchObject({
      name: 'AbortError',
    });
  });

  it('keeps one state per store, forgetting the least recently asked past 256', () => {
    const pressureOf = storePressures();
    const first = pressureOf('https://a.example');
    expect(pressureOf('https://a.example')).toBe(first);
    for (let i = 0; i < 256; i++) pressureOf(`https://s${i}.example`);
    expect(pressureOf('https://a.example')).not.toBe(first);
  });
});
