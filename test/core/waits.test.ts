import { getEventListeners } from 'node:events';
import { untilAborted, within } from '../../src/core/waits';

const never = new Promise<never>(() => undefined);

describe('untilAborted', () => {
  it('settles as the work does, leaving no listener on the signal', async () => {
    const controller = new AbortController();
    await expect(untilAborted(Promise.resolve(7), controller.signal)).resolves.toBe(7);
    await expect(untilAborted(Promise.reject(new Error('broke')), controller.signal)).rejects.toThrow(
      'broke',
    );
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('rejects with the abort reason once the signal aborts first, or at once when it already has', async () => {
    const controller = new AbortController();
    const waiting = untilAborted(never, controller.signal);
    controller.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    await expect(untilAborted(Promise.resolve(1), controller.signal)).rejects.toThrow('stopping');
  });
});

describe('within', () => {
  it('settles as the work does when it ends in time', async () => {
    await expect(within(Promise.resolve('read'), 60_000, () => 'late')).resolves.toBe('read');
  });

  it("settles as onLate says once the time has passed: its value, or its throw's rejection", async () => {
    await expect(within(never, 5, () => undefined)).resolves.toBeUndefined();
    await expect(
      within(never, 5, () => {
        throw new Error('no answer within 5 ms');
      }),
    ).rejects.toThrow('no answer within 5 ms');
  });

  it('calls onLate only when the time passed first', async () => {
    const late = jest.fn(() => 0);
    await within(Promise.resolve(1), 5, late);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(late).not.toHaveBeenCalled();
  });
});
