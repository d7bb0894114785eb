/** Tests of abortable: a Promise-returning effect as an Observable whose unsubscription aborts the effect. */
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { abortable } from '../../src/agent/abortable';

describe('abortable', () => {
  it('emits the value and then completes when the effect resolves', async () => {
    const values = await lastValueFrom(abortable(() => Promise.resolve(42)).pipe(toArray()));
    expect(values).toEqual([42]);
  });

  it('errors with the effect’s error when the effect rejects', async () => {
    const failing = abortable(() => Promise.reject(new Error('download failed')));
    await expect(firstValueFrom(failing)).rejects.toThrow('download failed');
  });

  it('runs the effect once per subscription and not before', async () => {
    let runs = 0;
    const counted = abortable(() => Promise.resolve(++runs));
    expect(runs).toBe(0);
    await expect(firstValueFrom(counted)).resolves.toBe(1);
    await expect(firstValueFrom(counted)).resolves.toBe(2);
  });

  it('aborts the effect’s signal when unsubscribed before the effect settles', async () => {
    let seen: AbortSignal | undefined;
    let finish!: () => void;
    const effect = (signal: AbortSignal): Promise<string> => {
      seen = signal;
      return new Promise<string>((resolve) => (finish = () => resolve('late')));
    };
    const values: string[] = [];
    const subscription = abortable(effect).subscribe((value) => values.push(value));
    expect(seen?.aborted).toBe(false);

    subscription.unsubscribe();
    expect(seen?.aborted).toBe(true);
    expect((seen?.reason as Error).message).toBe('unsubscribed');

    finish(); // a late value goes nowhere
    await Promise.resolve();
    await Promise.resolve();
    expect(values).toEqual([]);
  });

  it('does not report an error when the aborted effect rejects after unsubscription', async () => {
    const errors: unknown[] = [];
    const subscription = abortable(
      (signal) =>
        new Promise<never>((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason as Error)),
        ),
    ).subscribe({ error: (error: unknown) => errors.push(error) });

    subscription.unsubscribe();
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual([]);
  });
});
