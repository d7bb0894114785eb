/** Tests of createLane: how many names it works on at once, what it does with names not its own, per-model order. */
import { asapScheduler } from 'rxjs';
import type { ModelName } from '../../src/core/model-name';
import { createLane, laneCounts, type LaneOptions } from '../../src/loader/lane';
import { newRecord, type ModelRecord } from '../../src/loader/model-record';

const name = (text: string): ModelName => text as ModelName;

/** Lets the promise callbacks queued so far run (work starts once a model's earlier work has settled). */
const settle = async (): Promise<void> => {
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
};

/** A lane over `records` whose work waits until the test ends it, logged in `log`. */
const laneOver = (records: Map<ModelName, ModelRecord>, options: Partial<LaneOptions> = {}) => {
  const log: string[] = [];
  const ends = new Map<string, () => void>();
  const lane = createLane(asapScheduler, {
    records,
    workers: 2,
    takes: () => true,
    work: (record) =>
      new Promise<void>((resolve) => {
        log.push(`start ${record.name}`);
        ends.set(record.name, () => {
          log.push(`end ${record.name}`);
          resolve();
        });
      }),
    threw: (record, error) => log.push(`threw ${record.name}: ${(error as Error).message}`),
    freed: () => lane.pump(),
    ...options,
  });
  const end = async (model: string): Promise<void> => {
    ends.get(model)!();
    await settle();
  };
  return { lane, log, end };
};

const recordsOf = (...names: string[]): Map<ModelName, ModelRecord> =>
  new Map(names.map((text) => [name(text), newRecord(name(text))]));

describe('createLane', () => {
  it('works on at most `workers` names at once and takes the next when one ends', async () => {
    const { lane, log, end } = laneOver(recordsOf('a', 'b', 'c'));
    for (const model of ['a', 'b', 'c']) lane.queue.add(name(model));
    lane.pump();
    await settle();
    expect(log).toEqual(['start a', 'start b']);
    await end('a');
    expect(log).toEqual(['start a', 'start b', 'end a', 'start c']);
    expect(laneCounts([lane])).toEqual({ queued: 0, processing: 2, delayed: 0 });
  });

  it('hands over a name it does not take, and drops one when it has nowhere to hand it', () => {
    const handed: string[] = [];
    const records = recordsOf('a', 'b');
    const taking = laneOver(records, {
      takes: (record) => record.name !== 'b',
      handOver: (model) => handed.push(model),
    });
    const dropping = laneOver(records, { takes: (record) => record.name !== 'b' });
    for (const { lane } of [taking, dropping]) {
      lane.queue.add(name('b'));
      lane.pump();
      expect(lane.queue.has(name('b'))).toBe(false);
    }
    expect(handed).toEqual(['b']);
    expect([...taking.log, ...dropping.log]).toEqual([]);
  });

  it('ends a name whose record is gone without working on it', async () => {
    const { lane, log } = laneOver(recordsOf());
    lane.queue.add(name('gone'));
    lane.pump();
    await settle();
    expect(log).toEqual([]);
    expect(lane.queue.has(name('gone'))).toBe(false);
  });

  it('starts work on a model only after its earlier work (of another lane) has ended', async () => {
    const records = recordsOf('a');
    const first = laneOver(records);
    const second = laneOver(records);
    first.lane.queue.add(name('a'));
    first.lane.pump();
    second.lane.queue.add(name('a'));
    second.lane.pump();
    await settle();
    expect([...first.log, ...second.log]).toEqual(['start a']);
    await first.end('a');
    expect(second.log).toEqual(['start a']);
  });

  it('frees the worker and runs later work on a model whose work rejected, and tells it', async () => {
    let fails = 1;
    const { lane, log } = laneOver(recordsOf('a'), {
      workers: 1,
      work: (record) => {
        log.push(`start ${record.name}`);
        return fails-- > 0 ? Promise.reject(new Error('a defect')) : Promise.resolve();
      },
    });
    lane.queue.add(name('a'));
    lane.pump();
    await settle();
    expect(log).toEqual(['start a', 'threw a: a defect']);
    expect(laneCounts([lane])).toEqual({ queued: 0, processing: 0, delayed: 0 });

    lane.queue.add(name('a'));
    lane.pump();
    await settle();
    expect(log).toEqual(['start a', 'threw a: a defect', 'start a']);
    expect(lane.queue.has(name('a'))).toBe(false);
  });
});
