/** The waiting helpers: a poll with a deadline, a deadline on a promise, and delays a close can end. */
import { endableDelays, sleep, waitFor, withTimeout } from '../../src/testing/wait';

describe('waitFor', () => {
  it('resolves once the condition holds', async () => {
    let checks = 0;
    await waitFor(() => ++checks === 3, 10_000, 'the third check');
    expect(checks).toBe(3);
  });

  it('waits for a condition that resolves true', async () => {
    let checks = 0;
    await waitFor(() => Promise.resolve(++checks >= 2), 10_000);
    expect(checks).toBe(2);
  });

  it('rejects at the deadline, saying what it waited for, asked only then', async () => {
    let asked = 0;
    const what = (): string => `the answer (asked ${++asked} times)`;
    await expect(waitFor(() => false, 30, what)).rejects.toThrow(
      'timed out after 30 ms waiting for the answer (asked 1 times)',
    );
  });

  it('rejects with the error of a condition that throws', async () => {
    await expect(
      waitFor(() => {
        throw new Error('the process exited');
      }, 1_000),
    ).rejects.toThrow('the process exited');
  });

  it('rejects at the deadline when a check never settles (a request to a stopped server), saying what it waited for', async () => {
    const hanging = (): Promise<boolean> => new Promise<boolean>(() => undefined);
    const outcome = waitFor(hanging, 50, 'the server to answer').then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    // Far past the deadline: a check that hangs must not hold the wait beyond it.
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 5_000).unref());
    expect(await Promise.race([outcome, late])).toBe(
      'timed out after 50 ms waiting for the server to answer',
    );
  });
});

describe('withTimeout', () => {
  it('resolves with the value of a promise that settles in time', async () => {
    await expect(
      withTimeout(
        sleep(5).then(() => 42),
        1_000,
        'the value',
      ),
    ).resolves.toBe(42);
  });

  it('passes a rejection through', async () => {
    await expect(withTimeout(Promise.reject(new Error('no')), 1_000, 'the value')).rejects.toThrow('no');
  });

  it('rejects after the timeout, saying what it waited for', async () => {
    await expect(withTimeout(new Promise(() => undefined), 20, () => 'Godot')).rejects.toThrow(
      'timed out after 20 ms waiting for Godot',
    );
  });
});

describe('endableDelays', () => {
  it('resolves a delay after its time', async () => {
    const started = Date.now();
    await endableDelays().delay(30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('resolves every running delay at once on endAll', async () => {
    const delays = endableDelays();
    // Delays past the test's timeout: that they resolve at all is endAll's doing.
    const pending = Promise.all([delays.delay(600_000), delays.delay(1_200_000)]);
    delays.endAll();
    await pending;
  });
});
