/** Tests of createWorkQueue on virtual time: operation sequences as tables, and its invariants over random ones. */
import fc from 'fast-check';
import { VirtualTimeScheduler } from 'rxjs';
import { createWorkQueue, type WorkQueue, type WorkQueueCounts } from '../../src/loader/work-queue';

/** Moves virtual time on by `ms`, running the delayed adds that come due (a no-op action pins the clock at the end). */
const advance = (scheduler: VirtualTimeScheduler, ms: number): void => {
  const to = scheduler.now() + ms;
  scheduler.schedule(() => undefined, ms);
  scheduler.maxFrames = to;
  scheduler.flush();
};

/** One step of a table test: an operation, or what the queue must answer at that point. */
type Step =
  | readonly ['add' | 'cancel' | 'done', string]
  | readonly ['addAfter', string, number]
  | readonly ['advance', number]
  | readonly ['shutDown']
  /** `get()` must return this key (undefined: none). */
  | readonly ['get', string | undefined]
  /** The counts must be these: queued, processing, delayed. */
  | readonly ['counts', number, number, number]
  /** `available$` must have emitted this many times so far. */
  | readonly ['available', number];

const counts = (queued: number, processing: number, delayed: number): WorkQueueCounts => ({
  queued,
  processing,
  delayed,
});

const play = (steps: ReadonlyArray<Step>): void => {
  const scheduler = new VirtualTimeScheduler();
  const queue = createWorkQueue<string>(scheduler);
  let available = 0;
  queue.available$.subscribe(() => available++);
  for (const [i, step] of steps.entries()) {
    const at = `step ${i} (${step.join(' ')})`;
    switch (step[0]) {
      case 'add':
        queue.add(step[1]);
        break;
      case 'cancel':
        queue.cancelAddAfter(step[1]);
        break;
      case 'done':
        queue.done(step[1]);
        break;
      case 'addAfter':
        queue.addAfter(step[1], step[2]);
        break;
      case 'advance':
        advance(scheduler, step[1]);
        break;
      case 'shutDown':
        queue.shutDown();
        break;
      case 'get':
        expect([at, queue.get()]).toEqual([at, step[1]]);
        break;
      case 'counts':
        expect([at, queue.counts()]).toEqual([at, counts(step[1], step[2], step[3])]);
        break;
      case 'available':
        expect([at, available]).toEqual([at, step[1]]);
        break;
    }
  }
};

describe('createWorkQueue', () => {
  it.each<[string, ReadonlyArray<Step>]>([
    [
      'hands keys out in the order they were added',
      [
        ['add', 'a'],
        ['add', 'b'],
        ['add', 'c'],
        ['get', 'a'],
        ['get', 'b'],
        ['get', 'c'],
        ['get', undefined],
      ],
    ],
    [
      'hands nothing out when nothing was added',
      [
        ['get', undefined],
        ['counts', 0, 0, 0],
        ['available', 0],
      ],
    ],
    [
      'queues a key at most once',
      [
        ['add', 'a'],
        ['add', 'b'],
        ['add', 'a'],
        ['counts', 2, 0, 0],
        ['get', 'a'],
        ['get', 'b'],
        ['get', undefined],
      ],
    ],
    [
      'does not hand a key out again while it is processed, and queues it again on done when it was added meanwhile',
      [
        ['add', 'a'],
        ['get', 'a'],
        ['add', 'a'],
        ['add', 'a'],
        ['get', undefined],
        ['counts', 0, 1, 0],
        ['done', 'a'],
        ['counts', 1, 0, 0],
        ['get', 'a'],
        ['done', 'a'],
        ['get', undefined],
        ['counts', 0, 0, 0],
      ],
    ],
    [
      'forgets a key on done when it was not added meanwhile',
      [
        ['add', 'a'],
        ['get', 'a'],
        ['done', 'a'],
        ['get', undefined],
        ['counts', 0, 0, 0],
      ],
    ],
    [
      'ignores done of a key that is not processed',
      [
        ['add', 'a'],
        ['done', 'a'],
        ['done', 'b'],
        ['counts', 1, 0, 0],
        ['get', 'a'],
      ],
    ],
    [
      'hands other keys out while one is processed',
      [
        ['add', 'a'],
        ['get', 'a'],
        ['add', 'b'],
        ['add', 'a'],
        ['get', 'b'],
        ['done', 'a'],
        ['get', 'a'],
      ],
    ],
    [
      'queues a delayed add once its delay has passed, not before',
      [
        ['addAfter', 'a', 10],
        ['counts', 0, 0, 1],
        ['get', undefined],
        ['advance', 9],
        ['get', undefined],
        ['advance', 1],
        ['counts', 1, 0, 0],
        ['get', 'a'],
      ],
    ],
    [
      'keeps the earlier of two delayed adds of one key (the later was asked first)',
      [
        ['addAfter', 'a', 10],
        ['addAfter', 'a', 5],
        ['counts', 0, 0, 1],
        ['advance', 5],
        ['get', 'a'],
        ['done', 'a'],
        ['advance', 20],
        ['get', undefined],
      ],
    ],
    [
      'keeps the earlier of two delayed adds of one key (the earlier was asked first)',
      [
        ['addAfter', 'a', 5],
        ['addAfter', 'a', 10],
        ['advance', 5],
        ['get', 'a'],
        ['done', 'a'],
        ['advance', 20],
        ['get', undefined],
      ],
    ],
    [
      'adds at once when the delay is 0',
      [
        ['addAfter', 'a', 0],
        ['counts', 1, 0, 0],
        ['get', 'a'],
      ],
    ],
    [
      'drops a delayed add that is cancelled',
      [
        ['addAfter', 'a', 10],
        ['cancel', 'a'],
        ['counts', 0, 0, 0],
        ['advance', 20],
        ['get', undefined],
        ['available', 0],
      ],
    ],
    [
      'cancels only the delayed add, not a plain one',
      [
        ['add', 'a'],
        ['addAfter', 'a', 10],
        ['cancel', 'a'],
        ['counts', 1, 0, 0],
        ['get', 'a'],
      ],
    ],
    [
      'marks a processed key dirty when its delayed add comes due, and queues it on done',
      [
        ['add', 'a'],
        ['get', 'a'],
        ['addAfter', 'a', 10],
        ['advance', 10],
        ['get', undefined],
        ['counts', 0, 1, 0],
        ['done', 'a'],
        ['get', 'a'],
      ],
    ],
    [
      'queues a key whose delayed add was asked while it was processed, once the delay has passed after done',
      [
        ['add', 'a'],
        ['get', 'a'],
        ['addAfter', 'a', 10],
        ['done', 'a'],
        ['counts', 0, 0, 1],
        ['advance', 10],
        ['get', 'a'],
      ],
    ],
    [
      'hands nothing out after shutDown, forgets queued keys and cancels delayed adds',
      [
        ['add', 'a'],
        ['add', 'b'],
        ['get', 'a'],
        ['addAfter', 'c', 5],
        ['add', 'a'],
        ['shutDown'],
        ['get', undefined],
        ['counts', 0, 1, 0],
        ['add', 'd'],
        ['addAfter', 'e', 0],
        ['advance', 10],
        ['get', undefined],
        ['done', 'a'],
        ['get', undefined],
        ['counts', 0, 0, 0],
      ],
    ],
    [
      'says a key is available each time one is queued, not when an add changes nothing',
      [
        ['add', 'a'],
        ['available', 1],
        ['add', 'a'],
        ['available', 1],
        ['get', 'a'],
        ['add', 'a'],
        ['available', 1],
        ['done', 'a'],
        ['available', 2],
        ['addAfter', 'b', 5],
        ['available', 2],
        ['advance', 5],
        ['available', 3],
      ],
    ],
  ])('%s', (_, steps) => play(steps));

  it('says a key is available synchronously, so the owner can take it before add returns', () => {
    const queue = createWorkQueue<string>(new VirtualTimeScheduler());
    const taken: Array<string | undefined> = [];
    queue.available$.subscribe(() => taken.push(queue.get()));
    queue.add('a');
    expect(taken).toEqual(['a']);
    expect(queue.isQueued('a')).toBe(false);
  });

  it('tells whether a key waits to be handed out', () => {
    const queue = createWorkQueue<string>(new VirtualTimeScheduler());
    queue.add('a');
    expect([queue.isQueued('a'), queue.isQueued('b')]).toEqual([true, false]);
    queue.get();
    queue.add('a'); // dirty, but not queued until done
    expect(queue.isQueued('a')).toBe(false);
    queue.done('a');
    expect(queue.isQueued('a')).toBe(true);
  });

  it('completes available$ on shutDown', () => {
    const queue = createWorkQueue<string>(new VirtualTimeScheduler());
    let completed = false;
    queue.available$.subscribe({ complete: () => (completed = true) });
    queue.shutDown();
    expect(completed).toBe(true);
  });

  it('keeps the order of many keys across the compaction of its array', () => {
    const queue = createWorkQueue<number>(new VirtualTimeScheduler());
    const keys = Array.from({ length: 5000 }, (_, i) => i);
    const out: number[] = [];
    for (const key of keys) {
      queue.add(key);
      if (key % 3 === 0) out.push(queue.get()!);
    }
    for (let key = queue.get(); key !== undefined; key = queue.get()) out.push(key);
    expect(out).toEqual(keys);
  });
});

/** A random operation on keys a–d; `done` picks one of the keys being processed. */
type Op =
  | { readonly op: 'add' | 'cancel'; readonly key: string }
  | { readonly op: 'addAfter'; readonly key: string; readonly ms: number }
  | { readonly op: 'get' | 'shutDown' }
  | { readonly op: 'done'; readonly pick: number }
  | { readonly op: 'advance'; readonly ms: number };

const keyArb = fc.constantFrom('a', 'b', 'c', 'd');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('add' as const), key: keyArb }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('addAfter' as const), key: keyArb, ms: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), key: keyArb }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('get' as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('done' as const), pick: fc.nat(3) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'shutDown' as const }) },
);

/**
 * What the queue owes: `owed` maps a key to the time since which it must be handed out again (added after its
 * last get, or a delayed add came due), `delayed` maps a key to the due time of its delayed add.
 */
interface Model {
  now: number;
  shut: boolean;
  readonly processing: Set<string>;
  readonly owed: Map<string, number>;
  readonly delayed: Map<string, number>;
}

const owe = (model: Model, key: string, since: number): void => {
  if (!model.shut) model.owed.set(key, Math.min(model.owed.get(key) ?? since, since));
};

/** Checks one hand-out against the model: owed since no later than now, and not being processed. */
const handOut = (model: Model, key: string | undefined): void => {
  if (model.shut) return expect(key).toBeUndefined();
  if (key === undefined) {
    // Nothing handed out: every owed key is being processed (it is queued again on done).
    expect([...model.owed.keys()].filter((k) => !model.processing.has(k))).toEqual([]);
    return;
  }
  expect(model.processing.has(key)).toBe(false);
  expect(model.owed.get(key)).toBeLessThanOrEqual(model.now);
  model.owed.delete(key);
  model.processing.add(key);
};

const apply = (queue: WorkQueue<string>, scheduler: VirtualTimeScheduler, model: Model, step: Op): void => {
  switch (step.op) {
    case 'add':
      queue.add(step.key);
      owe(model, step.key, model.now);
      break;
    case 'addAfter':
      queue.addAfter(step.key, step.ms);
      if (model.shut) break;
      if (step.ms === 0) owe(model, step.key, model.now);
      else
        model.delayed.set(step.key, Math.min(model.delayed.get(step.key) ?? Infinity, model.now + step.ms));
      break;
    case 'cancel':
      queue.cancelAddAfter(step.key);
      model.delayed.delete(step.key);
      break;
    case 'get':
      handOut(model, queue.get());
      break;
    case 'done': {
      const key = [...model.processing][step.pick % Math.max(1, model.processing.size)];
      if (key === undefined) break;
      queue.done(key);
      model.processing.delete(key);
      break;
    }
    case 'advance':
      advance(scheduler, step.ms);
      model.now += step.ms;
      for (const [key, due] of model.delayed)
        if (due <= model.now) {
          owe(model, key, due);
          model.delayed.delete(key);
        }
      break;
    case 'shutDown':
      queue.shutDown();
      model.shut = true;
      model.owed.clear();
      model.delayed.clear();
      break;
  }
};

describe('createWorkQueue (property)', () => {
  it('never hands a key out twice at a time, queues it at most once, respects delays and owes nothing at the end', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const scheduler = new VirtualTimeScheduler();
        const queue = createWorkQueue<string>(scheduler);
        const model: Model = {
          now: 0,
          shut: false,
          processing: new Set(),
          owed: new Map(),
          delayed: new Map(),
        };
        for (const step of ops) {
          apply(queue, scheduler, model, step);
          const waiting = [...model.owed.keys()].filter((k) => !model.processing.has(k)).length;
          expect(queue.counts()).toEqual(counts(waiting, model.processing.size, model.delayed.size));
        }
        // Finish every key in progress and let every delay pass: each key owed is handed out once more, and then
        // nothing is (after shutDown, nothing at all).
        while (model.processing.size > 0) apply(queue, scheduler, model, { op: 'done', pick: 0 });
        apply(queue, scheduler, model, { op: 'advance', ms: 100 });
        const owed = [...model.owed.keys()].sort();
        const handedOut: string[] = [];
        for (let key = queue.get(); key !== undefined; key = queue.get()) {
          handOut(model, key);
          handedOut.push(key);
          queue.done(key);
          model.processing.delete(key);
        }
        expect(handedOut.sort()).toEqual(owed);
        expect(model.owed.size).toBe(0);
        expect(queue.counts()).toEqual(counts(0, 0, 0));
      }),
      { numRuns: 1000 },
    );
  });
});
