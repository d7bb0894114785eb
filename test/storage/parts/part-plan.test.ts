/** Tests of PartPlan: ranges cut to size, handed out in order, and the widest one split when none is queued. */
import {
  connectionsFor,
  partBytesFor,
  PartPlan,
  rangedThresholdBytes,
} from '../../../src/storage/parts/part-plan';

const MiB = 2 ** 20;

describe('partBytesFor', () => {
  it('aims at two ranges per connection, in whole MiB, between 4 and 64 MiB', () => {
    expect(partBytesFor(1024 * MiB, 8)).toBe(64 * MiB);
    expect(partBytesFor(256 * MiB, 8)).toBe(16 * MiB);
    expect(partBytesFor(64 * MiB, 8)).toBe(4 * MiB);
    expect(partBytesFor(100 * 1024 * MiB, 8)).toBe(64 * MiB);
    expect(partBytesFor(1000 * MiB + 1, 8) % MiB).toBe(0);
  });

  it('gives every connection a range of its own from the start, and opens none without one', () => {
    // 40 MiB over 8 connections: 10 ranges of 4 MiB, not 5 of 8 (three connections would split ranges just asked for).
    expect(partBytesFor(40 * MiB, 8)).toBe(4 * MiB);
    expect(connectionsFor(40 * MiB, 4 * MiB, 8)).toBe(8);
    expect(partBytesFor(rangedThresholdBytes, 16)).toBe(4 * MiB);
    expect(connectionsFor(rangedThresholdBytes, 4 * MiB, 16)).toBe(8);
  });
});

describe('PartPlan', () => {
  it('covers the file with ranges handed out from the start', () => {
    const plan = new PartPlan(20 * MiB + 5, 8 * MiB);
    const ranges = [plan.take(), plan.take(), plan.take()].map((part) => [part?.start, part?.end]);
    expect(ranges).toEqual([
      [0, 8 * MiB],
      [8 * MiB, 16 * MiB],
      [16 * MiB, 20 * MiB + 5],
    ]);
  });

  it('splits the active range with the most bytes left once none is queued, and its owner stops at the split', () => {
    const plan = new PartPlan(32 * MiB, 16 * MiB);
    const first = plan.take()!;
    const second = plan.take()!;
    first.next = 12 * MiB;
    const stolen = plan.take()!;
    expect(stolen).toEqual({ start: 8 * MiB + 16 * MiB, next: 24 * MiB, end: 32 * MiB });
    expect(second.end).toBe(24 * MiB);
    expect(first.end).toBe(16 * MiB);
  });

  it('hands what is left of a range given back to the next connection first, and nothing of one written whole', () => {
    const plan = new PartPlan(24 * MiB, 8 * MiB);
    const first = plan.take()!;
    first.next = 3 * MiB;
    plan.giveBack(first);
    expect(plan.take()).toEqual({ start: 3 * MiB, next: 3 * MiB, end: 8 * MiB });
    const second = plan.take()!;
    second.next = second.end;
    plan.giveBack(second);
    expect(plan.take()).toEqual({ start: 16 * MiB, next: 16 * MiB, end: 24 * MiB });
  });

  it('splits nothing below two minimum halves, and nothing once every range is done', () => {
    const plan = new PartPlan(16 * MiB, 8 * MiB);
    const first = plan.take()!;
    const second = plan.take()!;
    first.next = 1 * MiB;
    second.next = 8 * MiB + 1 * MiB;
    expect(plan.take()).toBeUndefined();
    plan.finished(first);
    plan.finished(second);
    expect(plan.take()).toBeUndefined();
  });
});
