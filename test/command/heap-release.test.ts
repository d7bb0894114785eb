import pino from 'pino';
import { BehaviorSubject, Subject, VirtualTimeScheduler, type Observable } from 'rxjs';
import { releasingHeap, type HeapRelease } from '../../src/command/heap-release';
import { readyEvent, type AgentEvent } from '../../src/core/model-status';
import type { Loader } from '../../src/loader';
import type { AgentRun } from '../../src/wiring';
import type { AgentSettings } from '../../src/agent';
import { LogSink } from '../helpers/log-sink';

const MiB = 2 ** 20;
/** The fake runs never look at their capabilities. */
const noCapabilities = {} as Parameters<AgentRun>[0];

/** A heap whose committed size the test sets, and whose collections it counts (each brings it back to `after`). */
const fakeHeap = (startBytes: number, afterBytes: number) => {
  let committed = startBytes;
  let collections = 0;
  const release: HeapRelease = {
    committedBytes: () => committed,
    collect: () => {
      collections++;
      committed = afterBytes;
    },
  };
  return {
    release,
    grow: (bytes: number) => void (committed += bytes),
    collections: () => collections,
  };
};

/** An agent run whose loader's idleness and events the test drives. */
const fakeRun = () => {
  const idle$ = new BehaviorSubject(true);
  const events$ = new Subject<AgentEvent>();
  const run: AgentRun = (_capabilities, settings) => {
    settings.onStart?.({ inPlace: undefined as never, loader: { idle$ } as unknown as Loader, deferred: 0 });
    return events$;
  };
  return { run, idle$, events$ };
};

const setUp = (heap: ReturnType<typeof fakeHeap>, quietMs = 1000) => {
  const scheduler = new VirtualTimeScheduler(undefined, Infinity);
  const sink = new LogSink();
  const log = pino({ level: 'debug' }, sink);
  const agent = fakeRun();
  const started: unknown[] = [];
  const settings = { onStart: (start: unknown) => started.push(start) } as unknown as AgentSettings;
  const wrapped = releasingHeap(heap.release, log, { quietMs, minGrowthBytes: 8 * MiB, scheduler })(
    agent.run,
  );
  const seen: AgentEvent[] = [];
  let completed = false;
  const run$: Observable<AgentEvent> = wrapped(noCapabilities, settings);
  const subscription = run$.subscribe({
    next: (event) => seen.push(event),
    complete: () => (completed = true),
  });
  /** Advances virtual time by `ms`, running what falls due. */
  const advance = (ms: number): void => {
    scheduler.maxFrames = scheduler.frame + ms;
    scheduler.flush();
    scheduler.frame = scheduler.maxFrames;
  };
  /** A burst of work that grows the heap by `bytes`, after which the loader is idle again. */
  const burst = (bytes: number): void => {
    agent.idle$.next(false);
    heap.grow(bytes);
    agent.idle$.next(true);
  };
  return { agent, advance, burst, sink, seen, started, subscription, completed: () => completed };
};

describe('releasingHeap', () => {
  it('collects once the loader has been idle quietMs after a burst that grew the heap by minGrowthBytes', () => {
    const heap = fakeHeap(20 * MiB, 20 * MiB);
    const { advance, burst, sink } = setUp(heap);
    burst(23 * MiB);
    advance(999);
    expect(heap.collections()).toBe(0);
    advance(1);
    expect(heap.collections()).toBe(1);
    expect(sink.lines).toEqual([
      expect.objectContaining({ msg: 'heap released after a burst', heapTotalMiB: 43, releasedToMiB: 20 }),
    ]);
    advance(60_000); // idle from then on: nothing more
    expect(heap.collections()).toBe(1);
  });

  it('leaves a heap that grew less than minGrowthBytes since the last release alone', () => {
    const heap = fakeHeap(20 * MiB, 21 * MiB);
    const { advance, burst } = setUp(heap);
    burst(7 * MiB);
    advance(5000);
    expect(heap.collections()).toBe(0);
    burst(10 * MiB); // 37 MiB: 17 over the start
    advance(1000);
    expect(heap.collections()).toBe(1);
    burst(7 * MiB); // 28 MiB: 7 over the 21 the release left
    advance(5000);
    expect(heap.collections()).toBe(1);
  });

  it('waits for a quiet loader: work that resumes within quietMs puts the collection off', () => {
    const heap = fakeHeap(20 * MiB, 20 * MiB);
    const { agent, advance, burst } = setUp(heap);
    burst(20 * MiB);
    advance(500);
    agent.idle$.next(false);
    advance(5000);
    expect(heap.collections()).toBe(0);
    agent.idle$.next(true);
    advance(1000);
    expect(heap.collections()).toBe(1);
  });

  it("passes the run's events and onStart through, and completes with it", () => {
    const heap = fakeHeap(20 * MiB, 20 * MiB);
    const { agent, seen, started, completed } = setUp(heap);
    const ready = readyEvent(0);
    agent.events$.next(ready);
    expect(seen).toEqual([ready]);
    expect(started).toHaveLength(1);
    expect(completed()).toBe(false);
    agent.events$.complete();
    expect(completed()).toBe(true);
  });

  it('stops watching the loader when unsubscribed', () => {
    const heap = fakeHeap(20 * MiB, 20 * MiB);
    const { agent, advance, burst, subscription } = setUp(heap);
    burst(20 * MiB);
    subscription.unsubscribe();
    advance(5000);
    expect(heap.collections()).toBe(0);
    expect(agent.idle$.observed).toBe(false);
  });

  it('is the run itself where no collection can be asked for (Node.js without --expose-gc)', () => {
    const log = pino({ level: 'silent' });
    const settings = { onStart: jest.fn() } as unknown as AgentSettings;
    const agent = fakeRun();
    const events$ = releasingHeap({ committedBytes: () => 0, collect: undefined }, log)(agent.run)(
      noCapabilities,
      settings,
    );
    expect(events$).toBe(agent.events$);
  });
});
