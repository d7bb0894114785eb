/** Tests of createWorkQueue on virtual time: operation sequences as tables. */
import { VirtualTimeScheduler } from 'rxjs';
import { createWorkQueue, type WorkQueueCounts } from '../../src/loader/work-queue';
import { advance } from './virtual-time';

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
