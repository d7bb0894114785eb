/**
 * Watch failures a resume would only repeat, on the real process (`dist/cli.js`, the real @kubernetes/client-node):
 * a line over 8 MiB, a line that is no JSON, an event for another object, an ERROR event. A real API server keeps
 * such an event in its history and sends it again to a watch resumed from before it, so the agent must re-list
 * (after its backoff), not resume; a list that is itself over the cap (the ConfigMap really is too big) is reported
 * once and retried with backoff; the next good version is applied within a bound set by the backoff, not by the
 * 330 s stall timer; and the requests stay bounded by the time elapsed over the backoff.
 */
import { performance } from 'node:perf_hooks';
import { sleep, waitFor } from '../../../src/testing/wait';
import type { KubeApiRequest } from '../../../src/testing/kube-api-stand-in';
import { killAllCli } from '../../helpers/cli-process';
import type { LogLine } from '../../helpers/log-sink';
import { useKubeAgent } from '../../helpers/kube-agent';
import { useTempDir } from '../../helpers/temp-dir';

jest.setTimeout(90_000);
afterEach(killAllCli);
const tmp = useTempDir('kube-watch-relist');
const kube = useKubeAgent(tmp);

/** `--retry-base-ms` = `--retry-max-ms`: every retry of a failed list or watch waits this long, no less. */
const retryMs = 250;
/**
 * How long the test waits for the next good version to be applied: a few retries and the 9 MiB answers read
 * meanwhile, on a machine as loaded as it may be. Without the re-list it never is before the stall timer (330 s with
 * the default --watch-timeout-s): an apply within the wait is the re-list's.
 */
const appliedWithinMs = 60_000;

/** The agent on the ConfigMap listing alpha (storage holds alpha and beta), its watch open. */
const startAgent = async (flags: Record<string, number> = {}) => {
  const { agent, cluster, server } = await kube.start({
    names: ['alpha', 'beta'],
    initial: ['alpha'],
    flags: { 'retry-base-ms': retryMs, 'retry-max-ms': retryMs, ...flags },
  });
  await agent.waitForLog('start-up sync complete; ready');
  await waitFor(() => cluster.api.openWatches() === 1, 10_000, 'an open watch');
  return { agent, api: cluster.api, server, good: kube.models('alpha', 'beta') };
};

/** The requests from index `since` on, of `kind`. */
const requestsOf = (
  requests: ReadonlyArray<KubeApiRequest>,
  since: number,
  kind?: KubeApiRequest['kind'],
): ReadonlyArray<KubeApiRequest> =>
  requests.slice(since).filter((r) => kind === undefined || r.kind === kind);

/** At most one request a retry, and a few more for the failing watch and the last list and watch. */
const boundFor = (elapsedMs: number): number => Math.floor(elapsedMs / retryMs) + 4;

const rejectedTooBig = (log: LogLine): boolean =>
  log['msg'] === 'config rejected; keeping the previous models' &&
  /configmap serving\/models key models\.json/.test(String(log['reason'])) &&
  /8388608 bytes/.test(String(log['reason']));

describe('a watch failure a resume would repeat', () => {
  it('re-lists after a watch line over 8 MiB, reports each version of a ConfigMap over the cap once, and applies the next good version within the backoff', async () => {
    const { agent, api, server, good } = await startAgent();
    const since = api.requests.length;
    const startedAt = performance.now();
    // Lists, and lists of the metadata alone (what a retry is while the version stays too big).
    const listsSoFar = (): number =>
      requestsOf(api.requests, since).filter((r) => r.kind === 'list' || r.kind === 'metadata').length;
    // The ConfigMap stays too big for a while, in two versions: the agent re-lists, and keeps retrying with backoff.
    const huge = [api.apply({ 'models.json': 'x'.repeat(9 * 2 ** 20) })];
    await waitFor(() => listsSoFar() >= 3, appliedWithinMs, 'three lists of the first version over the cap');
    const listsOfFirst = listsSoFar();
    huge.push(api.apply({ 'models.json': 'y'.repeat(9 * 2 ** 20) }));
    await waitFor(
      () => listsSoFar() >= listsOfFirst + 3,
      appliedWithinMs,
      'three lists of the second version over the cap',
    );
    api.apply(good);
    await waitFor(() => server.loaded.has('beta'), appliedWithinMs, 'beta loaded from the next good version');
    const elapsedMs = performance.now() - startedAt;
    // No resume from before the big version: a resume would only be sent it again.
    const watches = requestsOf(api.requests, since, 'watch');
    expect(
      watches.filter((w) => Number(w.query['resourceVersion']) < Number(huge[0]!.resourceVersion)),
    ).toEqual([]);
    // One request a retry; a new version over the cap costs two more (its metadata, the list pinned to it).
    expect(requestsOf(api.requests, since).length).toBeLessThanOrEqual(boundFor(elapsedMs) + 2 * huge.length);
    // While a version stays too big, a retry reads its metadata alone, not its 9 MiB again.
    expect(requestsOf(api.requests, since, 'list').length).toBeLessThanOrEqual(3 * huge.length + 2);
    // One warn line for each version over the cap, naming the ConfigMap, the key, the version and the cap.
    const reasons = agent.logs.filter(rejectedTooBig).map((log) => String(log['reason']));
    expect(reasons).toHaveLength(huge.length);
    huge.forEach(({ resourceVersion }, index) =>
      expect(reasons[index]).toContain(
        `models.json: its version ${resourceVersion} from the API server is over 8388608 bytes`,
      ),
    );
    expect(server.requests.filter((r) => r.path.endsWith('/unload'))).toEqual([]);
    // Then the watch goes on from the good version: no more lists.
    await waitFor(() => api.openWatches() === 1, 10_000, 'the watch open again');
    const lists = listsSoFar();
    await sleep(4 * retryMs);
    expect(listsSoFar()).toBe(lists);
    expect(agent.child.exitCode).toBeNull();
  });

  const otherObject = JSON.stringify({
    type: 'MODIFIED',
    object: { kind: 'ConfigMap', metadata: { name: 'other', resourceVersion: '1' }, data: {} },
  });
  it.each([
    ['a line over 8 MiB', () => `{"type":"MODIFIED","object":{"data":{"x":"${'y'.repeat(9 * 2 ** 20)}"}}}`],
    ['a line that is no JSON', () => '{"type":"MODIFIED","object":'],
    ['an event of a type no API server sends', () => '{"type":"UPSERTED","object":{"metadata":{}}}'],
    ['an event for another ConfigMap', () => otherObject],
    [
      'an ERROR event',
      () =>
        JSON.stringify({
          type: 'ERROR',
          object: {
            kind: 'Status',
            status: 'Failure',
            message: 'internal error',
            reason: 'InternalError',
            code: 500,
          },
        }),
    ],
  ])(
    're-lists after %s kept in the history, and applies the next good version within the backoff',
    async (_what, line) => {
      const { api, server, good, agent } = await startAgent();
      const since = api.requests.length;
      const startedAt = performance.now();
      const broken = api.storeRaw(`${line()}\n`);
      api.apply(good);
      await waitFor(
        () => server.loaded.has('beta'),
        appliedWithinMs,
        'beta loaded from the next good version',
      );
      const elapsedMs = performance.now() - startedAt;
      const watches = requestsOf(api.requests, since, 'watch');
      expect(
        watches.filter((w) => Number(w.query['resourceVersion']) < Number(broken.resourceVersion)),
      ).toEqual([]);
      expect(requestsOf(api.requests, since, 'list').length).toBeGreaterThanOrEqual(1);
      expect(requestsOf(api.requests, since).length).toBeLessThanOrEqual(boundFor(elapsedMs));
      expect(agent.child.exitCode).toBeNull();
    },
  );

  it('refuses a value over --max-config-bytes in a line under 8 MiB once, keeps the watch, and applies the next good version at once', async () => {
    const { agent, api, server, good } = await startAgent({ 'max-config-bytes': 4096 });
    const since = api.requests.length;
    api.apply({ 'models.json': 'x'.repeat(8192) });
    const rejected = await agent.waitForLog('config rejected; keeping the previous models', 10_000);
    expect(rejected['reason']).toBe(
      'configmap serving/models key models.json is 8192 bytes, over the limit of 4096 bytes (--max-config-bytes); it was not read',
    );
    api.apply(good);
    await waitFor(() => server.loaded.has('beta'), appliedWithinMs, 'beta loaded from the next good version');
    expect(requestsOf(api.requests, since)).toEqual([]);
    expect(
      agent.logs.filter((log) => log['msg'] === 'config rejected; keeping the previous models'),
    ).toHaveLength(1);
  });
});

describe('a watch the API server refuses while it answers lists', () => {
  it('applies each new version through a list after the backoff (a Role with get and list but no watch), and says the Role forbade the watch', async () => {
    const { agent, api, server, good } = await startAgent();
    api.forbidWatches(true);
    api.dropWatches('end');
    await agent.waitForLog(
      (log) =>
        log['msg'] === 'ConfigMap list or watch failed; retrying' &&
        /403 Forbidden/.test(String(log['reason'])),
      30_000,
    );
    // A resume only meets the refusal again: the edit is seen by the list a re-list sends after the backoff.
    api.apply(good);
    await waitFor(() => server.loaded.has('beta'), appliedWithinMs, 'beta loaded from a list');
    expect(server.requests.filter((request) => request.path.endsWith('/unload'))).toEqual([]);
    expect(agent.child.exitCode).toBeNull();
  });
});

describe('a watch the API server ends right after an event', () => {
  it('is re-opened no more than once a second, however often the server sends one event and ends it', async () => {
    const { api } = await startAgent();
    const since = api.requests.length;
    const startedAt = performance.now();
    // Each watch that opens gets one bookmark (an event, which resets the client's wait) and is ended at once.
    while (performance.now() - startedAt < 3000) {
      if (api.openWatches() > 0) {
        api.bookmark();
        api.dropWatches('end');
      }
      await sleep(5);
    }
    const watches = requestsOf(api.requests, since, 'watch').length;
    // Re-opened (the watch goes on), at most once a second over the 3 s: before, 150 a second were sent.
    expect(watches).toBeGreaterThanOrEqual(1);
    expect(watches).toBeLessThanOrEqual(4);
  });
});
