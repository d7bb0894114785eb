/** opIntake: a burst of ops (a 10,000-model config) taken in chunks, in order; probes are answered in between. */
import { Subscription, type SchedulerLike } from 'rxjs';

export interface OpIntake<T> {
  readonly offer: (op: T) => void;
  readonly waiting: () => number;
  /** Cancels the turns scheduled; the ops waiting are dropped. */
  readonly subscription: Subscription;
}

/**
 * Hands ops to `take`, at most `perTurn` per synchronous burst and for at most `budgetMs` of it (`scheduler`'s
 * clock); the rest wait for the next chunk (a new macrotask). `changed`: ops started or stopped waiting.
 */
export const createOpIntake = <T>(
  take: (op: T) => void,
  { perTurn, budgetMs, scheduler }: { perTurn: number; budgetMs: number; scheduler: SchedulerLike },
  changed: () => void,
): OpIntake<T> => {
  const subscription = new Subscription();
  let backlog: T[] = [];
  let head = 0;
  let takenThisTurn = 0;
  let turnStarted = 0;
  const waiting = (): number => backlog.length - head;
  const later = (work: () => void): void => void subscription.add(scheduler.schedule(work));
  // A synchronous burst ends at the first microtask checkpoint: the count starts again there.
  const count = (): void => {
    if (takenThisTurn++ > 0) return;
    turnStarted = scheduler.now();
    queueMicrotask(() => (takenThisTurn = 0));
  };
  // Within the count and the time budget (a slow, shared machine takes fewer ops per turn).
  const mayTake = (): boolean =>
    takenThisTurn === 0 || (takenThisTurn < perTurn && scheduler.now() - turnStarted < budgetMs);
  const drain = (): void => {
    takenThisTurn = 0; // a chunk runs in a turn of its own
    while (waiting() > 0 && mayTake()) {
      count();
      take(backlog[head++]!);
    }
    if (waiting() > 0) return later(drain);
    backlog = [];
    head = 0;
    changed();
  };
  const offer = (op: T): void => {
    if (waiting() > 0) return void backlog.push(op);
    if (mayTake()) {
      count();
      return take(op);
    }
    backlog.push(op);
    later(drain);
    changed();
  };
  return { offer, waiting, subscription };
};
