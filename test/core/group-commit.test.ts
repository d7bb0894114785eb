/** groupCommit: calls during a run share the one run queued after it; each call's run starts after the call. */
import { groupCommit } from '../../src/core/group-commit';

/** An action whose runs the test finishes one by one, recording when each started. */
const controlledRun = () => {
  const runs: Array<{ finish: (error?: Error) => void }> = [];
  const run = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      runs.push({ finish: (error) => (error === undefined ? resolve() : reject(error)) });
    });
  return { runs, run };
};
const settled = async (promise: Promise<unknown>): Promise<string> => {
  let state = 'pending';
  promise.then(
    () => (state = 'resolved'),
    () => (state = 'rejected'),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

describe('groupCommit', () => {
  it('runs at once when idle, and resolves that call when the run ends', async () => {
    const { runs, run } = controlledRun();
    const commit = groupCommit(run);
    const call = commit();
    expect(runs).toHaveLength(1);
    expect(await settled(call)).toBe('pending');
    runs[0]!.finish();
    expect(await settled(call)).toBe('resolved');
  });

  it('serves every call made during a run with one run started after it', async () => {
    const { runs, run } = controlledRun();
    const commit = groupCommit(run);
    const first = commit();
    const later = [commit(), commit(), commit()];
    expect(runs).toHaveLength(1);
    runs[0]!.finish();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toHaveLength(2);
    expect(await settled(Promise.all(later))).toBe('pending');
    runs[1]!.finish();
    await Promise.all(later);
    expect(runs).toHaveLength(2);
  });

  it('never lets a call join a run that started before it', async () => {
    const { runs, run } = controlledRun();
    const commit = groupCommit(run);
    void commit();
    const late = commit();
    runs[0]!.finish();
    expect(await settled(late)).toBe('pending');
    runs[1]!.finish();
    expect(await settled(late)).toBe('resolved');
  });

  it('rejects the calls a failed run served, and starts afresh at the next call', async () => {
    const { runs, run } = controlledRun();
    const commit = groupCommit(run);
    const failed = commit();
    runs[0]!.finish(new Error('EIO'));
    await expect(failed).rejects.toThrow('EIO');
    const next = commit();
    expect(runs).toHaveLength(2);
    runs[1]!.finish();
    await expect(next).resolves.toBeUndefined();
  });

  it('serves calls queued behind a failed run with a fresh run', async () => {
    const { runs, run } = controlledRun();
    const commit = groupCommit(run);
    const failed = commit();
    const queued = commit();
    runs[0]!.finish(new Error('EIO'));
    await expect(failed).rejects.toThrow('EIO');
    await new Promise((resolve) => setImmediate(resolve));
    runs[1]!.finish();
    await expect(queued).resolves.toBeUndefined();
  });
});
