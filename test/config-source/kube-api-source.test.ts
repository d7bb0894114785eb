/**
 * kubeApiSource without the client (ESM, which jest's CommonJS cannot load): a fake list-watch runner plays the
 * hooks, and the source must turn them into reads and events. The real client runs in
 * test/integration/kube-api.e2e.test.ts, through the CLI.
 */
import { either as E } from 'fp-ts';
import pino from 'pino';
import { firstValueFrom, take, toArray } from 'rxjs';
import { describeConfigError } from '../../src/core/errors';
import { kubeApiSource, type KubeApiSourceOptions } from '../../src/config-source/kube-api-source';
import type { WatchHooks } from '../../src/config-source/kube-list-watch';
import type { ConfigRead } from '../../src/ports';

/** A source on a fake runner: `hooks` once it runs, how often it was started and stopped. */
const fakeSource = (extra: Partial<KubeApiSourceOptions> = {}) => {
  const runner = { hooks: undefined as WatchHooks | undefined, starts: 0, stops: 0 };
  const source = kubeApiSource({
    name: 'models',
    namespace: 'serving',
    key: 'models.json',
    env: {},
    log: pino({ level: 'silent' }),
    maxBytes: 1000,
    watchTimeoutSeconds: 10,
    retry: { baseMs: 1, maxMs: 2 },
    runWatch: (_options, _ref, hooks) => {
      runner.hooks = hooks;
      runner.starts += 1;
      return () => void (runner.stops += 1);
    },
    ...extra,
  });
  return { source, runner, hooks: (): WatchHooks => runner.hooks! };
};

const version = (resourceVersion: string, text?: string) => ({
  metadata: { name: 'models', resourceVersion },
  ...(text !== undefined ? { data: { 'models.json': text } } : {}),
});
const shown = (read: ConfigRead): string =>
  E.match(describeConfigError, ({ text }: { text: string }) => `text ${text}`)(read);

describe('kubeApiSource', () => {
  it('makes a lone read (--dry-run --once) wait for the first list, then stop the watch', async () => {
    const { source, runner, hooks } = fakeSource();
    const read = firstValueFrom(source.read());
    expect(runner.starts).toBe(1);
    hooks().content(version('5', '[]'));
    expect(shown(await read)).toBe('text []');
    expect(runner.stops).toBe(1);
  });

  it('emits a change per version and reads the latest content, sharing one watch with read', async () => {
    const { source, runner, hooks } = fakeSource();
    const events = firstValueFrom(source.events$.pipe(take(3), toArray()));
    hooks().content(version('5', '[1]'));
    expect(shown(await firstValueFrom(source.read()))).toBe('text [1]');
    hooks().content(version('6', '[2]'));
    hooks().content(undefined);
    expect(await events).toEqual(Array(3).fill({ event: 'change', name: 'models.json' }));
    expect(shown(await firstValueFrom(source.read()))).toBe(
      'cannot read configmap serving/models key models.json: the ConfigMap does not exist',
    );
    expect(runner.starts).toBe(1);
  });

  it('reports a failure as the read only until a list has succeeded; the last content stays after that', async () => {
    const { source, hooks } = fakeSource();
    const subscription = source.events$.subscribe();
    const first = firstValueFrom(source.read());
    hooks().failed('the API server refused the credentials (401 Unauthorized)');
    expect(await first).toMatchObject(E.left({ _tag: 'ReadFailed', code: 'EKUBEAPI' }));
    hooks().content(version('7', '[3]'));
    hooks().failed('cannot reach the API server (ECONNREFUSED)');
    expect(shown(await firstValueFrom(source.read()))).toBe('text [3]');
    subscription.unsubscribe();
  });

  it('tells its status: liveness, versions read and seen, restarts, re-lists, failures', async () => {
    const alive: number[] = [];
    const { source, hooks } = fakeSource({ onAlive: () => alive.push(1) });
    const subscription = source.events$.subscribe();
    expect(source.status()).toEqual({
      source: 'kube-api',
      configMap: 'serving/models',
      stallMs: 20_000,
      watchRestarts: 0,
      relists: 0,
      failures: 0,
    });
    hooks().alive();
    hooks().version('8');
    hooks().content(version('8', '[]'));
    await firstValueFrom(source.read());
    hooks().version('9');
    hooks().rewatched();
    hooks().relisted();
    hooks().failed('cannot reach the API server (ECONNREFUSED)');
    expect(source.status()).toMatchObject({
      lastReadResourceVersion: '8',
      lastSeenResourceVersion: '9',
      watchRestarts: 1,
      relists: 1,
      failures: 1,
      lastFailure: 'cannot reach the API server (ECONNREFUSED)',
    });
    expect(source.status().lastAliveAt).toBeGreaterThan(0);
    hooks().alive();
    expect(source.status().lastFailure).toBeUndefined();
    expect(alive).toHaveLength(2);
    subscription.unsubscribe();
  });

  const label = 'cannot read configmap serving/models key models.json';
  it.each([
    ['a ConfigMap that is a string', 'models', 'the API server sent a string as the ConfigMap'],
    ['a ConfigMap that is null', null, 'the API server sent null as the ConfigMap'],
    ['a ConfigMap that is an array', [], 'the API server sent an array as the ConfigMap'],
    ['data that is a string', { data: '[]' }, 'its data is a string, not an object of strings'],
    ['data that is an array', { data: ['[]'] }, 'its data is an array, not an object of strings'],
    [
      'the key holding a number',
      { data: { 'models.json': 5 } },
      'its data key models.json holds a number, not a string',
    ],
    [
      'the key holding null',
      { data: { 'models.json': null } },
      'its data key models.json holds null, not a string',
    ],
    [
      'the key holding an object',
      { data: { 'models.json': { a: 1 } } },
      'its data key models.json holds an object, not a string',
    ],
    [
      'another key holding a number',
      { data: { 'models.json': '[]', n: 1 } },
      'its data key n holds a number, not a string',
    ],
    [
      'binaryData that is a number',
      { binaryData: 7 },
      'its binaryData is a number, not an object of strings',
    ],
    [
      'binaryData holding a boolean',
      { binaryData: { 'models.json': true } },
      'its binaryData key models.json holds a boolean, not a string',
    ],
    [
      'binaryData that is no base64',
      { binaryData: { 'models.json': '[] not base64' } },
      'its binaryData key models.json is not base64',
    ],
    [
      'the key in both data and binaryData',
      { data: { 'models.json': '[]' }, binaryData: { 'models.json': btoa('[1]') } },
      'the key models.json is in both data and binaryData (the API server allows it in one)',
    ],
  ])(
    'rejects %s with a read naming the ConfigMap, the key and what was wrong',
    async (_what, configMap, reason) => {
      const { source, hooks } = fakeSource();
      const subscription = source.events$.subscribe();
      hooks().content(configMap as never);
      const read = await firstValueFrom(source.read());
      expect(read).toMatchObject(E.left({ _tag: 'ReadFailed', code: 'EINVAL' }));
      expect(shown(read)).toBe(`${label}: ${reason}`);
      subscription.unsubscribe();
    },
  );

  it('reports a version too big to read once while it lasts, keeps the watch, and reads the next good version', async () => {
    const { source, hooks } = fakeSource();
    const events: unknown[] = [];
    const subscription = source.events$.subscribe((event) => events.push(event));
    hooks().content(version('3', '[1]'));
    const tooBig = 'its answer from the API server is over 8388608 bytes';
    hooks().refused(tooBig);
    hooks().refused(tooBig);
    expect(events).toHaveLength(2);
    const read = await firstValueFrom(source.read());
    expect(read).toMatchObject(E.left({ _tag: 'ReadFailed', code: 'EFBIG' }));
    expect(shown(read)).toBe(`${label}: ${tooBig}`);
    expect(source.status().unreadSince).toBeUndefined();
    hooks().content(version('5', '[2]'));
    expect(shown(await firstValueFrom(source.read()))).toBe('text [2]');
    subscription.unsubscribe();
  });

  it('reads the next good version after a version of the wrong type', async () => {
    const { source, hooks } = fakeSource();
    const subscription = source.events$.subscribe();
    hooks().content({ metadata: { resourceVersion: 3 }, data: { 'models.json': 5 } } as never);
    expect(shown(await firstValueFrom(source.read()))).toMatch(/holds a number/);
    expect(source.status().lastReadResourceVersion).toBeUndefined();
    hooks().content(version('4', '[]'));
    expect(shown(await firstValueFrom(source.read()))).toBe('text []');
    subscription.unsubscribe();
  });
});
