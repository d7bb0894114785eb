/** WorkQueue: a keyed work queue with the semantics of client-go's util/workqueue, pulled without blocking. */
import { asyncScheduler, Subject, type Observable, type SchedulerLike, type Subscription } from 'rxjs';

/** Keys waiting to be handed out, handed out and not yet done, and waiting for a delayed add. */
export interface WorkQueueCounts {
  readonly queued: number;
  readonly processing: number;
  readonly delayed: number;
}

/**
 * A FIFO of keys where a key is queued at most once and is never handed out twice at a time: an `add` while the
 * key is processed marks it dirty, and `done` queues it again. The owner pulls keys with `get` (it never blocks)
 * whenever `available$` says there may be one, and calls `done` when it has finished with a key.
 */
export interface WorkQueue<K> {
  /** Queues `key` unless it is queued already; while `key` is processed, queues it again on `done`. */
  readonly add: (key: K) => void;
  /** `add(key)` once `delayMs` has passed on the scheduler. Of two delayed adds of one key, the earlier stands. */
  readonly addAfter: (key: K, delayMs: number) => void;
  /** Drops the delayed add of `key`, if one is waiting (a newer state supersedes a retry). */
  readonly cancelAddAfter: (key: K) => void;
  /** The key queued longest, now processing; undefined when none is queued or the queue is shut down. */
  readonly get: () => K | undefined;
  /** Ends the processing of `key`; queues it again if it was added meanwhile. */
  readonly done: (key: K) => void;
  /** Hands out no more keys, forgets queued ones and cancels delayed adds; processing keys may still be `done`. */
  readonly shutDown: () => void;
  /** True while `key` waits to be handed out (a dirty key being processed is not queued until `done`). */
  readonly isQueued: (key: K) => boolean;
  /** True while `key` is queued, being processed or waiting for a delayed add. */
  readonly has: (key: K) => boolean;
  /** The queue's size; it is idle when all three are 0. */
  readonly counts: () => WorkQueueCounts;
  /** Emits, synchronously, each time a key is queued (so `get` may return one); completes on `shutDown`. */
  readonly available$: Observable<void>;
}

/** Keys already handed out stay at the front of the array until they are this many and half of it. */
const compactAfter = 1024;

/** An empty work queue; delayed adds are timed on `scheduler` (virtual time in tests). */
export const createWorkQueue = <K>(scheduler: SchedulerLike = asyncScheduler): WorkQueue<K> => {
  // An array with a moving head: shifting a long array (or taking the first of a Set) is O(n) per key.
  const order: K[] = [];
  let head = 0;
  const queued = new Set<K>();
  const processing = new Set<K>();
  const dirty = new Set<K>();
  const delayed = new Map<K, { readonly dueAt: number; readonly timer: Subscription }>();
  const available$ = new Subject<void>();
  let shuttingDown = false;

  const add = (key: K): void => {
    if (shuttingDown) return;
    if (processing.has(key)) dirty.add(key);
    else if (!queued.has(key)) {
      queued.add(key);
      order.push(key);
      available$.next();
    }
  };

  const cancelAddAfter = (key: K): void => {
    delayed.get(key)?.timer.unsubscribe();
    delayed.delete(key);
  };

  const addAfter = (key: K, delayMs: number): void => {
    if (shuttingDown) return;
    if (delayMs <= 0) return add(key);
    const dueAt = scheduler.now() + delayMs;
    const waiting = delayed.get(key);
    if (waiting !== undefined && waiting.dueAt <= dueAt) return;
    waiting?.timer.unsubscribe();
    const timer = scheduler.schedule(() => {
      delayed.delete(key);
      add(key);
    }, delayMs);
    delayed.set(key, { dueAt, timer });
  };

  const get = (): K | undefined => {
    if (shuttingDown || head === order.length) return undefined;
    const key = order[head++]!;
    if (head === order.length || (head >= compactAfter && head * 2 >= order.length)) {
      order.splice(0, head);
      head = 0;
    }
    queued.delete(key);
    processing.add(key);
    return key;
  };

  const done = (key: K): void => {
    if (processing.delete(key) && dirty.delete(key)) add(key);
  };

  const shutDown = (): void => {
    shuttingDown = true;
    for (const key of [...delayed.keys()]) cancelAddAfter(key);
    order.length = 0;
    head = 0;
    queued.clear();
    dirty.clear();
    available$.complete();
  };

  return {
    add,
    addAfter,
    cancelAddAfter,
    get,
    done,
    shutDown,
    isQueued: (key) => queued.has(key),
    has: (key) => queued.has(key) || processing.has(key) || delayed.has(key),
    counts: () => ({ queued: queued.size, processing: processing.size, delayed: delayed.size }),
    available$: available$.asObservable(),
  };
};
