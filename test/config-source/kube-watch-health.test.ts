/**
 * kubeWatchProblem over a kubeApiSource on a fake list-watch runner: what liveness calls stuck with `--source
 * kube-api` (a version never read, the watch's machinery idle past its own deadline) and what it does not (a
 * quiet watch, an API server that is down while the watch retries).
 */
import pino from 'pino';
import { firstValueFrom } from 'rxjs';
import { kubeApiSource, kubeWatchProblem } from '../../src/config-source/kube-api-source';
import type { WatchHooks } from '../../src/config-source/kube-list-watch';
import { createSurfaceState } from '../../src/surface/surface-state';

const graceMs = 1000; // --watch-stall-ms
const watchTimeoutSeconds = 10; // the source re-establishes a silent watch after stallMsFor(10) = 20 s

const runningSource = () => {
  let hooks: WatchHooks | undefined;
  const source = kubeApiSource({
    name: 'models',
    namespace: 'serving',
    key: 'models.json',
    env: {},
    log: pino({ level: 'silent' }),
    maxBytes: 1000,
    watchTimeoutSeconds,
    retry: { baseMs: 1, maxMs: 2 },
    runWatch: (_options, _ref, given) => {
      hooks = given;
      return () => undefined;
    },
  });
  const subscription = source.events$.subscribe();
  return { source, subscription, hooks: (): WatchHooks => hooks! };
};

const configMap = (resourceVersion: string) => ({
  metadata: { name: 'models', resourceVersion },
  data: { 'models.json': '[]' },
});

describe('kubeWatchProblem', () => {
  it('finds nothing stuck on a watch that is quiet for twice the stall window', async () => {
    const { source, subscription, hooks } = runningSource();
    hooks().attempting();
    hooks().alive();
    hooks().content(configMap('3'));
    await firstValueFrom(source.read());
    const status = source.status();
    expect(kubeWatchProblem(status, status.lastAliveAt! + 2 * graceMs, graceMs)).toBeUndefined();
    expect(kubeWatchProblem(status, status.lastAliveAt! + status.stallMs, graceMs)).toBeUndefined();
    subscription.unsubscribe();
  });

  it('finds nothing stuck while the API server is down and the watch keeps retrying, and says it is unreachable', () => {
    const { source, subscription, hooks } = runningSource();
    hooks().alive();
    hooks().failed('cannot reach the API server (ECONNREFUSED)');
    hooks().attempting();
    hooks().failed('cannot reach the API server (ECONNREFUSED)');
    const status = source.status();
    expect(status.unreachableSince).toBeGreaterThanOrEqual(status.lastAliveAt!);
    expect(status.lastFailure).toBe('cannot reach the API server (ECONNREFUSED)');
    expect(kubeWatchProblem(status, status.lastActivityAt! + 2 * graceMs, graceMs)).toBeUndefined();
    hooks().alive();
    expect(source.status().unreachableSince).toBeUndefined();
    subscription.unsubscribe();
  });

  it('calls the watch stuck once its machinery has done nothing past its own deadline and the grace', () => {
    const { source, subscription, hooks } = runningSource();
    hooks().alive();
    const status = source.status();
    const past = status.lastActivityAt! + status.stallMs + graceMs + 1;
    expect(kubeWatchProblem(status, past, graceMs)).toMatch(
      /^the ConfigMap watch has done nothing for \d+ ms/,
    );
    subscription.unsubscribe();
  });

  it('calls the watch stuck when a version it delivered is not read within the grace, and not once it is read', async () => {
    const { source, subscription, hooks } = runningSource();
    hooks().alive();
    hooks().content(configMap('4'));
    const delivered = source.status();
    expect(kubeWatchProblem(delivered, delivered.unreadSince! + graceMs + 1, graceMs)).toMatch(
      /^the ConfigMap version the watch delivered \d+ ms ago has not been read/,
    );
    await firstValueFrom(source.read());
    expect(source.status().unreadSince).toBeUndefined();
    subscription.unsubscribe();
  });

  it('judges nothing before the watch first acts (the agent still waits for the model server)', () => {
    const { source, subscription } = runningSource();
    expect(kubeWatchProblem(source.status(), Date.now() + 10 * 60_000, graceMs)).toBeUndefined();
    subscription.unsubscribe();
  });
});

describe('createSurfaceState', () => {
  it('takes a self-judging watch at its word instead of its progress', () => {
    let clock = 1_000_000;
    const watch: { stuck?: string } = {};
    const state = createSurfaceState({
      stallMs: graceMs,
      source: 'kube-api',
      watchAliveAt: () => 1_000_000,
      watchStuck: () => watch.stuck,
      now: () => clock,
    });
    clock += 5 * graceMs; // no progress for five stall windows: a quiet watch
    expect(state.liveness()).toEqual({ ok: true });
    watch.stuck = 'the ConfigMap watch has done nothing for 99 ms';
    expect(state.liveness()).toEqual({ ok: false, reason: watch.stuck });
  });
});
