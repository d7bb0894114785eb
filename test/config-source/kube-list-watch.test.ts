/**
 * runListWatch while the API server cannot be reached (in jest the client itself cannot be loaded: every attempt
 * fails before a request, as against a server that is down): its backoff and its stall timer.
 */
import pino from 'pino';
import { runListWatch, type WatchHooks } from '../../src/config-source/kube-list-watch';
import { sleep, waitFor } from '../../src/testing/wait';
import { LogSink } from '../helpers/log-sink';

describe('runListWatch while the API server cannot be reached', () => {
  it('waits out a backoff longer than the stall window without calling the watch stalled, telling liveness it acts', async () => {
    const sink = new LogSink();
    const attempts: number[] = [];
    const acts: number[] = [];
    const hooks: WatchHooks = {
      content: () => undefined,
      refused: () => undefined,
      failed: () => void attempts.push(performance.now()),
      alive: () => undefined,
      version: () => undefined,
      relisted: () => undefined,
      rewatched: () => undefined,
      attempting: () => void acts.push(performance.now()),
    };
    // A 1 s watch is presumed stalled after 2 s without progress; each retry waits at least 5 s.
    const stop = runListWatch(
      {
        name: 'models',
        namespace: 'serving',
        env: {},
        log: pino(sink),
        watchTimeoutSeconds: 1,
        retry: { baseMs: 5000, maxMs: 5000 },
      },
      { namespace: 'serving' },
      hooks,
    );
    try {
      await waitFor(() => attempts.length > 0, 10_000, 'the first attempt failed');
      // Past the stall window (2 s), within the backoff (5 s).
      await sleep(3000);
    } finally {
      stop();
    }
    expect(sink.withMessage('ConfigMap watch made no progress; re-establishing it')).toEqual([]);
    expect(attempts).toHaveLength(1);
    // Liveness reads the machinery's acts: one at least every stall window while it waits.
    expect(acts.length).toBeGreaterThanOrEqual(2);
  });
});
