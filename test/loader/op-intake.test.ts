/** createOpIntake on virtual time: a burst is taken `perTurn` at a time, in order, one chunk per turn. */
import { VirtualTimeScheduler } from 'rxjs';
import { createOpIntake } from '../../src/loader/op-intake';

const setUp = (perTurn: number) => {
  const scheduler = new VirtualTimeScheduler();
  const taken: number[] = [];
  let changes = 0;
  const intake = createOpIntake<number>(
    (op) => taken.push(op),
    { perTurn, budgetMs: 10, scheduler }, // virtual time does not pass while ops are taken
    () => changes++,
  );
  return { scheduler, taken, intake, changes: () => changes };
};

describe('createOpIntake', () => {
  it('takes a burst up to perTurn at once, the rest one chunk per turn, in order', () => {
    const { scheduler, taken, intake, changes } = setUp(3);
    for (let op = 1; op <= 8; op++) intake.offer(op);
    expect([taken, intake.waiting(), changes()]).toEqual([[1, 2, 3], 5, 1]);
    scheduler.flush();
    expect([taken, intake.waiting(), changes()]).toEqual([[1, 2, 3, 4, 5, 6, 7, 8], 0, 2]);
  });

  it('takes small bursts at once, burst after burst', async () => {
    const { taken, intake } = setUp(3);
    intake.offer(1);
    intake.offer(2);
    await Promise.resolve(); // the burst ends
    intake.offer(3);
    intake.offer(4);
    intake.offer(5);
    expect([taken, intake.waiting()]).toEqual([[1, 2, 3, 4, 5], 0]);
  });

  it('keeps the order of ops offered while a backlog waits', async () => {
    const { scheduler, taken, intake } = setUp(2);
    [1, 2, 3, 4].forEach(intake.offer);
    [5, 6, 7].forEach(intake.offer);
    expect(taken).toEqual([1, 2]);
    await Promise.resolve();
    scheduler.flush();
    expect(taken).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('drops what waits and schedules nothing more once unsubscribed', () => {
    const { scheduler, taken, intake } = setUp(2);
    [1, 2, 3, 4, 5].forEach(intake.offer);
    intake.subscription.unsubscribe();
    scheduler.flush();
    expect(taken).toEqual([1, 2]);
  });
});
