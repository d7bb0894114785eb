/** Tests of createSlots: the abortable counting semaphore that bounds downloads and load calls. */
import { createSlots, inSlot } from '../../src/core/slots';

/** A task that runs until `finish` is called; `started` tells whether it began. */
const task = <T>(value: T) => {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const state = {
    started: false,
    finish,
    run: async (): Promise<T> => {
      state.started = true;
      await gate;
      return value;
    },
  };
  return state;
};

/** Lets pending promise callbacks run (no timers involved). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const live = (): AbortSignal => new AbortController().signal;

describe('createSlots', () => {
  it('runs at most `capacity` tasks at once and starts a waiting one when a slot frees', async () => {
    const slots = createSlots(2);
    const tasks = [task('a'), task('b'), task('c')];
    const results = tasks.map((t) => slots.use(live(), t.run));
    await settle();

    expect(tasks.map((t) => t.started)).toEqual([true, true, false]);
    expect(slots.inUse()).toBe(2);

    tasks[0]!.finish();
    await expect(results[0]).resolves.toBe('a');
    await settle();
    expect(tasks[2]!.started).toBe(true);
    expect(slots.inUse()).toBe(2);

    tasks[1]!.finish();
    tasks[2]!.finish();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c']);
    expect(slots.inUse()).toBe(0);
    expect(slots.highWater()).toBe(2);
  });

  it('lets any number of tasks wait without a signal, and runs them all, one at a time, in order', async () => {
    const slots = createSlots(1);
    const tasks = Array.from({ length: 50 }, (_, i) => task(i));
    const withSignal = slots.use(live(), () => Promise.resolve('first'));
    const results = tasks.map((t) => slots.use(undefined, t.run));
    await settle();
    expect(slots.inUse()).toBe(1);
    await expect(withSignal).resolves.toBe('first');
    for (const t of tasks) {
      await settle();
      t.finish();
    }
    await expect(Promise.all(results)).resolves.toEqual(tasks.map((_, i) => i));
    expect(slots.inUse()).toBe(0);
  });

  it('grants slots in the order they were asked for when tasks wait', async () => {
    const slots = createSlots(1);
    const order: string[] = [];
    const first = task('first');
    const running = slots.use(live(), first.run);
    const waiting = ['w1', 'w2', 'w3', 'w4'].map((id) =>
      slots.use(live(), async () => {
        order.push(id);
        await Promise.resolve();
      }),
    );
    await settle();
    expect(order).toEqual([]);

    first.finish();
    await Promise.all([running, ...waiting]);
    expect(order).toEqual(['w1', 'w2', 'w3', 'w4']);
    expect(slots.highWater()).toBe(1);
  });

  it('releases the slot when a task rejects', async () => {
    const slots = createSlots(1);
    await expect(slots.use(live(), () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(slots.inUse()).toBe(0);
    await expect(slots.use(live(), () => Promise.resolve(7))).resolves.toBe(7);
  });

  it('rejects with the abort reason and frees nothing when a waiting task is aborted', async () => {
    const slots = createSlots(1);
    const holder = task('holder');
    const held = slots.use(live(), holder.run);
    const controller = new AbortController();
    const aborted = task('aborted');
    const waiting = slots.use(controller.signal, aborted.run);
    const next = task('next');
    const after = slots.use(live(), next.run);
    await settle();

    controller.abort(new Error('superseded'));
    await expect(waiting).rejects.toThrow('superseded');
    await settle();
    expect(aborted.started).toBe(false);
    expect(next.started).toBe(false); // the holder still has the only slot
    expect(slots.inUse()).toBe(1);

    holder.finish();
    await settle();
    expect(next.started).toBe(true); // the aborted waiter gave its turn away
    next.finish();
    await expect(Promise.all([held, after])).resolves.toEqual(['holder', 'next']);
    expect(slots.inUse()).toBe(0);
    expect(slots.highWater()).toBe(1);
  });

  it('rejects at once without running the task when the signal is already aborted', async () => {
    const slots = createSlots(2);
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    const t = task('never');

    await expect(slots.use(controller.signal, t.run)).rejects.toThrow('shutting down');
    expect(t.started).toBe(false);
    expect(slots.inUse()).toBe(0);
    expect(slots.highWater()).toBe(0);
  });

  it('does not abort a task that already runs when its signal aborts', async () => {
    const slots = createSlots(1);
    const controller = new AbortController();
    const t = task('done');
    const result = slots.use(controller.signal, t.run);
    await settle();

    controller.abort(new Error('too late'));
    t.finish();
    await expect(result).resolves.toBe('done');
    expect(slots.inUse()).toBe(0);
  });

  it('reports the most tasks that ever ran at once as highWater when usage goes up and down', async () => {
    const slots = createSlots(3);
    expect(slots.highWater()).toBe(0);
    const first = [task(1), task(2)];
    const firstRuns = first.map((t) => slots.use(live(), t.run));
    await settle();
    expect(slots.highWater()).toBe(2);
    first.forEach((t) => t.finish());
    await Promise.all(firstRuns);

    const single = task(3);
    const singleRun = slots.use(live(), single.run);
    await settle();
    single.finish();
    await singleRun;
    expect(slots.highWater()).toBe(2);

    const burst = [task(4), task(5), task(6), task(7)];
    const burstRuns = burst.map((t) => slots.use(live(), t.run));
    await settle();
    burst.forEach((t) => t.finish());
    await Promise.all(burstRuns);
    expect(slots.highWater()).toBe(3);
  });
});

describe('inSlot', () => {
  it('runs the task in one of the pool’s slots, waiting while they are all taken', async () => {
    const pool = createSlots(1);
    const [first, second] = [task('a'), task('b')];
    const runs = [inSlot(pool, live(), first.run), inSlot(pool, live(), second.run)];
    await settle();
    expect([first.started, second.started, pool.inUse()]).toEqual([true, false, 1]);
    first.finish();
    await settle();
    expect(second.started).toBe(true);
    second.finish();
    expect(await Promise.all(runs)).toEqual(['a', 'b']);
  });

  it('runs the task at once when there is no pool', async () => {
    const only = task(42);
    const run = inSlot(undefined, live(), only.run);
    expect(only.started).toBe(true);
    only.finish();
    expect(await run).toBe(42);
  });
});
