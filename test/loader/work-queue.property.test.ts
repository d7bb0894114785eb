/** Property tests of createWorkQueue on virtual time: its invariants hold over random operation sequences. */
import fc from 'fast-check';
import { VirtualTimeScheduler } from 'rxjs';
import { createWorkQueue, type WorkQueue } from '../../src/loader/work-queue';
import { advance } from './virtual-time';

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

/** The keys owed and not being processed: those the queue holds, ready for `get`. */
const waitingKeys = (model: Model): Set<string> =>
  new Set([...model.owed.keys()].filter((key) => !model.processing.has(key)));

describe('createWorkQueue (property)', () => {
  it('never hands a key out twice at a time, queues it at most once, wakes a worker for each, respects delays and owes nothing at the end', () => {
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
        // A worker sleeps until available$ emits: every key newly queued must wake one (a lost wakeup is a hang).
        let wakeups = 0;
        let completed = false;
        queue.available$.subscribe({ next: () => wakeups++, complete: () => (completed = true) });
        for (const step of ops) {
          const waitingBefore = waitingKeys(model);
          const wakeupsBefore = wakeups;
          apply(queue, scheduler, model, step);
          const newlyWaiting = [...waitingKeys(model)].filter((key) => !waitingBefore.has(key)).length;
          expect(wakeups - wakeupsBefore).toBe(newlyWaiting);
          expect(completed).toBe(model.shut);
          const waiting = [...model.owed.keys()].filter((k) => !model.processing.has(k)).length;
          expect(queue.counts()).toEqual({
            queued: waiting,
            processing: model.processing.size,
            delayed: model.delayed.size,
          });
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
        expect(queue.counts()).toEqual({ queued: 0, processing: 0, delayed: 0 });
      }),
      { numRuns: 1000 },
    );
  });
});
