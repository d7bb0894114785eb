/** Tests of trackProgress: reports at the given pace, rate over the last interval, ETA, and one final report. */
import { trackProgress } from '../../src/storage/transfer-progress';
import type { DownloadProgress } from '../../src/ports';

const manualClock = () => {
  let now = 0;
  let tick: (() => void) | undefined;
  return {
    now: () => now,
    every: (_ms: number, fn: () => void) => {
      tick = fn;
      return () => (tick = undefined);
    },
    advance: (ms: number) => {
      now += ms;
      tick?.();
    },
    ticking: () => tick !== undefined,
  };
};

describe('trackProgress', () => {
  it('reports bytes, total, the rate of the last interval and the time left, then a final average', () => {
    const clock = manualClock();
    const reports: DownloadProgress[] = [];
    let bytes = 0;
    const tracker = trackProgress({
      bytes: () => bytes,
      totalBytes: () => 1000,
      everyMs: 10_000,
      report: (p) => reports.push(p),
      now: clock.now,
      every: clock.every,
    });
    bytes = 100;
    clock.advance(10_000);
    bytes = 500;
    clock.advance(10_000);
    bytes = 1000;
    clock.now();
    tracker.stop();
    tracker.stop();
    expect(reports).toEqual([
      { bytes: 100, totalBytes: 1000, elapsedMs: 10_000, bytesPerSecond: 10, etaSeconds: 90, done: false },
      { bytes: 500, totalBytes: 1000, elapsedMs: 20_000, bytesPerSecond: 40, etaSeconds: 13, done: false },
      { bytes: 1000, totalBytes: 1000, elapsedMs: 20_000, bytesPerSecond: 50, done: true },
    ]);
    expect(clock.ticking()).toBe(false);
  });

  it('reports no total or ETA when the size is unknown, and only the final report at interval 0', () => {
    const reports: DownloadProgress[] = [];
    const tracker = trackProgress({
      bytes: () => 7,
      totalBytes: () => undefined,
      everyMs: 0,
      report: (p) => reports.push(p),
      now: () => 0,
    });
    tracker.stop();
    expect(reports).toEqual([{ bytes: 7, elapsedMs: 0, bytesPerSecond: 0, done: true }]);
  });

  it('does nothing without a report function', () => {
    const clock = manualClock();
    trackProgress({
      bytes: () => 1,
      totalBytes: () => 1,
      everyMs: 10,
      report: undefined,
      every: clock.every,
    }).stop();
    expect(clock.ticking()).toBe(false);
  });
});
