/** Fuzz: coalesceBursts on virtual time, over random bursts: nothing is lost, nothing is stale, nothing waits long. */
import fc from 'fast-check';
import { ignoreElements, map, merge, timer, VirtualTimeScheduler } from 'rxjs';
import { coalesceBursts } from '../../../src/pipeline/coalesce-bursts';

interface Run {
  /** When each event came (event i carries the value i). */
  readonly times: ReadonlyArray<number>;
  /** When the source completed. */
  readonly end: number;
  readonly emissions: ReadonlyArray<{ readonly value: number; readonly at: number }>;
  readonly completedAt: number | undefined;
}

const run = (gaps: ReadonlyArray<number>, tail: number, quietMs: number, spacingMs: number): Run => {
  const scheduler = new VirtualTimeScheduler(undefined, Infinity);
  const times = gaps.reduce<number[]>((at, gap) => [...at, (at.at(-1) ?? 0) + gap], []);
  const end = times.at(-1)! + tail;
  const source$ = merge(
    ...times.map((at, value) => timer(at, scheduler).pipe(map(() => value))),
    timer(end, scheduler).pipe(ignoreElements()),
  );
  const emissions: Array<{ value: number; at: number }> = [];
  let completedAt: number | undefined;
  source$.pipe(coalesceBursts({ quietMs, spacingMs }, scheduler)).subscribe({
    next: (value) => emissions.push({ value, at: scheduler.now() }),
    complete: () => (completedAt = scheduler.now()),
  });
  scheduler.flush();
  return { times, end, emissions, completedAt };
};

/** The value of the last event strictly before `at` (-1 if none): events at `at` itself may come after. */
const latestBefore = (times: ReadonlyArray<number>, at: number): number => {
  let latest = -1;
  times.forEach((time, value) => {
    if (time < at) latest = value;
  });
  return latest;
};

const burstsArb = fc.record({
  gaps: fc.array(fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 400 })), {
    minLength: 1,
    maxLength: 40,
  }),
  tail: fc.integer({ min: 0, max: 500 }),
  quietMs: fc.integer({ min: 1, max: 150 }),
  spacingMs: fc.integer({ min: 1, max: 60 }),
});

describe('coalesceBursts (fuzz)', () => {
  // Emissions are triggers of a read, which sees the newest file: an emission of a newer event serves as well.
  it('follows the last event of every burst with an emission of it (or a newer one) within quietMs', () => {
    fc.assert(
      fc.property(burstsArb, ({ gaps, tail, quietMs, spacingMs }) => {
        const { times, end, emissions } = run(gaps, tail, quietMs, spacingMs);
        times.forEach((at, value) => {
          const next = times[value + 1];
          // An event that comes exactly quietMs later still belongs to the burst (it races the debounce's timer).
          const lastOfBurst = next === undefined || next - at > quietMs;
          if (!lastOfBurst) return;
          const by = Math.min(at + quietMs, end);
          expect(emissions.some((e) => e.value >= value && e.at >= at && e.at <= by)).toBe(true);
        });
      }),
      { numRuns: 1500 },
    );
  });

  it('never emits a stale event, and loses none at the end: the last one, then completion within spacingMs', () => {
    fc.assert(
      fc.property(burstsArb, ({ gaps, tail, quietMs, spacingMs }) => {
        const { times, end, emissions, completedAt } = run(gaps, tail, quietMs, spacingMs);
        for (const { value, at } of emissions) {
          expect(times[value]).toBeLessThanOrEqual(at);
          expect(value).toBeGreaterThanOrEqual(latestBefore(times, at));
        }
        expect(emissions.at(-1)?.value).toBe(times.length - 1);
        // A trailing emission still in its spacing window delays completion by at most that window.
        expect(completedAt).toBeGreaterThanOrEqual(end);
        expect(completedAt).toBeLessThanOrEqual(end + spacingMs);
      }),
      { numRuns: 1500 },
    );
  });

  it('emits the first event after a pause at once, and at most two per spacingMs while a burst goes on', () => {
    fc.assert(
      fc.property(burstsArb, ({ gaps, tail, quietMs, spacingMs }) => {
        const { times, emissions } = run(gaps, tail, quietMs, spacingMs);
        times.forEach((at, value) => {
          const pause = value === 0 || at - times[value - 1]! > Math.max(quietMs, 2 * spacingMs);
          if (pause) expect(emissions.some((e) => e.value === value && e.at === at)).toBe(true);
        });
        // One from the throttle's window and one from the quiet-time debounce can meet; never three.
        emissions.forEach((e, i) => {
          const later = emissions[i + 2];
          if (later !== undefined) expect(later.at - e.at).toBeGreaterThan(0);
        });
      }),
      { numRuns: 1500 },
    );
  });
});
