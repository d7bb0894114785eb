/** Tests of backoffDelay: capped exponential ceilings with full jitter drawn from an injected random source. */
import { backoffDelay } from '../../src/core/backoff';

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
