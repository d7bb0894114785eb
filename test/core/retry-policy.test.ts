/** Tests of the retry policy: capped exponential ceilings, and the waits each kind of jitter draws below them. */
import { backoffDelay, retryDelay, type RetryPolicy } from '../../src/core/retry-policy';

const top = (): number => 1; // the upper end of the jitter range
const bottom = (): number => 0;

describe('backoffDelay', () => {
  it.each([
    [1, 100, 10_000, 100],
    [2, 100, 10_000, 200],
    [3, 100, 10_000, 400],
    [4, 100, 10_000, 800],
    [7, 100, 10_000, 6_400],
    [8, 100, 10_000, 10_000],
    [20, 100, 10_000, 10_000],
    [1, 5, 50, 5],
    [4, 5, 50, 40],
    [5, 5, 50, 50],
    [1, 500, 300, 300],
  ])('waits at most the ceiling at attempt %d, base %d, max %d → %d', (attempt, baseMs, maxMs, ceiling) => {
    expect(backoffDelay(attempt, baseMs, maxMs, top)).toBe(ceiling);
  });

  it('stays at the cap and finite when the attempt count is huge', () => {
    expect(backoffDelay(1_000, 100, 60_000, top)).toBe(60_000);
    expect(backoffDelay(Number.MAX_SAFE_INTEGER, 1, 60_000, top)).toBe(60_000);
  });

  it.each([1, 2, 5, 30])('waits nothing when the random draw is 0 (attempt %d)', (attempt) => {
    expect(backoffDelay(attempt, 100, 10_000, bottom)).toBe(0);
  });

  it.each([
    [0.5, 3, 200],
    [0.25, 3, 100],
    [0.999, 1, 100],
    [0.001, 1, 0],
  ])('scales the ceiling by the random draw %d at attempt %d → %d ms', (draw, attempt, expected) => {
    expect(backoffDelay(attempt, 100, 10_000, () => draw)).toBe(expected);
  });

  it('returns whole milliseconds within [0, ceiling] for any draw in [0, 1]', () => {
    for (let i = 0; i <= 100; i++) {
      const delay = backoffDelay(4, 30, 10_000, () => i / 100);
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(240);
    }
  });

  it('draws one random number per call', () => {
    const draws: number[] = [];
    const random = (): number => {
      draws.push(1);
      return 0.5;
    };
    backoffDelay(2, 100, 1_000, random);
    expect(draws).toHaveLength(1);
  });
});

describe('retryDelay', () => {
  const policy: RetryPolicy = { maxAttempts: 8, baseMs: 100, maxMs: 10_000 };

  it('draws full jitter by default, as backoffDelay does', () => {
    for (const [attempt, draw] of [
      [1, 0],
      [3, 0.5],
      [4, 1],
      [20, 0.3],
    ] as const) {
      expect(retryDelay(policy, attempt, () => draw)).toBe(backoffDelay(attempt, 100, 10_000, () => draw));
    }
  });

  it('waits the ceiling itself, drawing nothing, without jitter', () => {
    const random = jest.fn(() => 0);
    const none: RetryPolicy = { ...policy, jitter: 'none' };
    expect([1, 2, 3, 8, 40].map((attempt) => retryDelay(none, attempt, random))).toEqual([
      100, 200, 400, 10_000, 10_000,
    ]);
    expect(random).not.toHaveBeenCalled();
  });

  it('never waits less than the base (or the cap, when lower) with at-least-base jitter', () => {
    const atLeastBase: RetryPolicy = { ...policy, jitter: 'at-least-base' };
    expect(retryDelay(atLeastBase, 1, bottom)).toBe(100);
    expect(retryDelay(atLeastBase, 4, bottom)).toBe(100);
    expect(retryDelay(atLeastBase, 4, () => 0.5)).toBe(400);
    expect(retryDelay(atLeastBase, 4, top)).toBe(800);
    expect(retryDelay({ ...atLeastBase, baseMs: 500, maxMs: 300 }, 1, bottom)).toBe(300);
  });
});
