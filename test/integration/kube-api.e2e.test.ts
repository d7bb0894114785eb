/**
 * The kube-api config source on the real process (`dist/cli.js`) against an API-server stand-in over TLS: start-up
 * load, a change applied at once, a dropped watch resumed from its version, 410 re-lists, bad values and a deleted
 * ConfigMap that unload nothing, a refused token, a stalled watch, 200 rapid changes, and --dry-run.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, runCli, startCli } from '../helpers/cli-process';
import { goodToken, startKubeApiCluster } from '../helpers/kube-api';
import { atLeast, type LogLine } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { useKubeAgent, type KubeAgent } from '../helpers/kube-agent';
import { freePort, get, getJson } from './surface-kit';
import type { StatusDocumentJson } from '../../src/core/status-document';
import { surfacePaths } from '../../src/surface/http-surface';

afterEach(killAllCli);
const tmp = useTempDir('kube-api');

const loadedLine = (model: string) => (log: LogLine) =>
  log['msg'] === 'model loaded' && log['model'] === model;

describe('--source kube-api on the real process', () => {
  const names = ['alpha', 'beta', 'gamma', 'delta'];
  const kube = useKubeAgent(tmp);
  // The --dry-run test runs its own stand-in, without the agent's.
  let afterDryRun: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await afterDryRun?.();
    afterDryRun = undefined;
  });
  const { models } = kube;
  /** The stand-ins and an agent watching the ConfigMap (which holds `initial`). */
  const startAgent = (
    initial: ReadonlyArray<string> | undefined,
    options: { token?: string; flags?: Record<string, string | number | boolean> } = {},
  ): Promise<KubeAgent> =>
    kube.start({
      ...(initial === undefined ? {} : { initial }),
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.flags === undefined ? {} : { flags: options.flags }),
    });
  const loadsOf = (standIn: V2ModelServerStandIn, model: string): number =>
    standIn.loads.filter((load) => load.name === model).length;
  const unloads = (standIn: V2ModelServerStandIn): number =>
    standIn.requests.filter((request) => request.path.endsWith('/unload')).length;

  it('loads the ConfigMap at start-up through a field-selected list and a bookmarked watch', async () => {
    const { agent, cluster, server } = await startAgent(['alpha', 'beta']);
    await agent.waitForLog('start-up sync complete; ready');
    expect([...server.loaded].sort()).toEqual(['alpha', 'beta']);
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    const [list, watch] = cluster.api.requests;
    expect(list).toMatchObject({
      kind: 'list',
      status: 200,
      query: { fieldSelector: 'metadata.name=models' },
    });
    expect(watch).toMatchObject({
      kind: 'watch',
      status: 200,
      query: { fieldSelector: 'metadata.name=models', allowWatchBookmarks: 'true', resourceVersion: '2' },
    });
    expect(watch?.query['timeoutSeconds']).toBe('300');
  });

  it('tells the surface: /healthz follows the watch, /status names the source and the version read, metrics count re-lists', async () => {
    const port = await freePort();
    const { agent, cluster } = await startAgent(['alpha'], { flags: { 'http-port': port } });
    await agent.waitForLog('start-up sync complete; ready');
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    const change = cluster.api.apply(models('alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'));
    expect((await get(port, surfacePaths.healthz)).status).toBe(200);
    const { json } = await getJson<StatusDocumentJson>(port, surfacePaths.status);
    expect(json.config).toMatchObject({
      source: 'kube-api',
      watch: {
        configMap: expect.stringMatching(/\/models$/) as unknown,
        lastReadResourceVersion: change.resourceVersion,
      },
    });
    cluster.api.expire('event');
    cluster.api.apply(models('alpha', 'beta', 'gamma'));
    await agent.waitForLog(loadedLine('gamma'), 10_000);
    await waitFor(
      async () => /^modelsync_config_relists_total [1-9]/m.test((await get(port, surfacePaths.metrics)).body),
      10_000,
      'a re-list counted',
    );
  });

  it('applies a MODIFIED from the watch itself: the load request follows the event, no re-list between', async () => {
    const { agent, cluster, server } = await startAgent(['alpha']);
    await agent.waitForLog('start-up sync complete; ready');
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    const lists = (): number =>
      cluster.api.requests.filter((r) => r.kind === 'list' || r.kind === 'metadata').length;
    const listsBefore = lists();
    cluster.api.apply(models('alpha', 'beta'));
    // The watch is re-opened after 300 s and the config re-read no sooner: only the event brings the load here.
    // How soon is a speed claim, measured by the bench (npm run bench).
    await waitFor(
      () => server.requests.some((r) => r.name === 'beta' && r.path.endsWith('/load')),
      20_000,
      'beta',
    );
    expect(lists()).toBe(listsBefore);
  });

  it('resumes a watch dropped mid-stream from its last version, missing and repeating nothing', async () => {
    const { agent, cluster, server } = await startAgent(['alpha']);
    await agent.waitForLog(loadedLine('alpha'));
    for (const how of ['reset', 'end'] as const) {
      await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
      const seenVersion = cluster.api.apply(
        models('alpha', how === 'reset' ? 'beta' : 'gamma'),
      ).resourceVersion;
      await agent.waitForLog(loadedLine(how === 'reset' ? 'beta' : 'gamma'));
      cluster.api.dropWatches(how);
      // A change while no watch is open: the resumed watch must bring it.
      const missed = how === 'reset' ? ['alpha', 'beta', 'delta'] : ['alpha', 'gamma', 'delta', 'beta'];
      cluster.api.apply(models(...missed));
      await waitFor(() => server.loaded.has('delta'), 10_000, 'delta loaded after the drop');
      const resumed = cluster.api.requests.filter((r) => r.kind === 'watch').at(-1);
      expect(resumed?.query['resourceVersion']).toBe(seenVersion);
      await waitFor(
        () => server.loaded.size === missed.length,
        5000,
        () => `${missed.join()} loaded`,
      );
      cluster.api.apply(models('alpha'));
      await waitFor(() => server.loaded.size === 1, 5000, 'back to alpha');
    }
    expect(cluster.api.requests.filter((r) => r.kind === 'list')).toHaveLength(1);
    expect(names.map((name) => loadsOf(server, name))).toEqual([1, 2, 1, 2]);
  });

  it('keeps the version a BOOKMARK carries: a reconnect resumes from it', async () => {
    const { agent, cluster, server } = await startAgent(['alpha']);
    await agent.waitForLog(loadedLine('alpha'));
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    cluster.api.bookmark();
    cluster.api.bookmark();
    await sleep(200);
    cluster.api.dropWatches('end');
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'a watch again');
    expect(
      cluster.api.requests.filter((r) => r.kind === 'watch').map((r) => r.query['resourceVersion']),
    ).toEqual(['2', '4']);
    expect(server.loads).toHaveLength(1);
  });

  it.each(['event', 'status'] as const)(
    're-lists after 410 Gone (as %s) and applies what changed',
    async (as) => {
      const { agent, cluster, server } = await startAgent(['alpha']);
      await agent.waitForLog(loadedLine('alpha'));
      await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
      cluster.api.apply(models('alpha', 'beta'));
      cluster.api.expire(as);
      await waitFor(
        () => cluster.api.requests.filter((r) => r.kind === 'list').length === 2,
        10_000,
        'a re-list',
      );
      await waitFor(() => server.loaded.has('beta'), 5000, 'beta loaded');
      if (as === 'status') expect(cluster.api.requests.some((r) => r.status === 410)).toBe(true);
      await waitFor(() => cluster.api.openWatches() === 1, 5000, 'a watch again');
      cluster.api.apply(models('beta'));
      await waitFor(() => !server.loaded.has('alpha'), 5000, 'alpha unloaded');
      expect(loadsOf(server, 'beta')).toBe(1);
    },
  );

  it('rejects a bad value and a deleted ConfigMap without unloading anything, then takes the next good one', async () => {
    const { agent, cluster, server } = await startAgent(['alpha', 'beta']);
    await agent.waitForLog('start-up sync complete; ready');
    cluster.api.apply({ 'models.json': '[{"modelName": "alpha", ' });
    const rejected = await agent.waitForLog('config rejected; keeping the previous models');
    expect(rejected['reason']).toMatch(/^configmap serving\/models key models\.json is not valid JSON/);
    cluster.api.apply({ other: 'x' });
    const noKey = await agent.waitForLog((log) => /has no key models\.json/.test(String(log['reason'])));
    cluster.api.remove();
    await agent.waitForLog(
      (log) => /ConfigMap does not exist/.test(String(log['reason'])),
      5000,
      agent.logs.indexOf(noKey),
    );
    expect(unloads(server)).toBe(0);
    expect([...server.loaded].sort()).toEqual(['alpha', 'beta']);
    cluster.api.apply(models('beta', 'gamma'));
    await agent.waitForLog(loadedLine('gamma'));
    await waitFor(() => !server.loaded.has('alpha'), 5000, 'alpha unloaded');
    expect(loadsOf(server, 'beta')).toBe(1);
  });

  it('says clearly that a wrong token is refused, never logs it, and retries until the rotated one works', async () => {
    const wrong = 'wrong-token-5b8d1e7c42';
    const { agent, cluster, server } = await startAgent(['alpha'], { token: wrong });
    const refused = await agent.waitForLog('ConfigMap list or watch failed; retrying');
    expect(refused['reason']).toMatch(/refused the credentials \(401 Unauthorized\)/);
    await cluster.writeToken(goodToken);
    await agent.waitForLog(loadedLine('alpha'), 10_000);
    expect(server.loaded.has('alpha')).toBe(true);
    const everything = agent.stderr.text + agent.stdout.text;
    expect(everything).not.toContain(wrong);
    expect(everything).not.toContain(goodToken);
  });

  it('says an API server that refuses connections by the network error, not by fetch\'s bare "fetch failed"', async () => {
    const { agent, cluster } = await startAgent(['alpha']);
    await agent.waitForLog(loadedLine('alpha'));
    await cluster.api.close();
    const refused = await agent.waitForLog(
      (log) =>
        log['msg'] === 'ConfigMap list or watch failed; retrying' &&
        !String(log['reason']).includes('terminated'),
    );
    expect(refused['reason']).toBe('cannot reach the API server (ECONNREFUSED)');
  });

  it('says a token file that is gone as the file, not as an API server it cannot reach', async () => {
    const { agent, cluster } = await startAgent(['alpha']);
    await agent.waitForLog(loadedLine('alpha'));
    await rm(join(tmp.path, 'token'));
    cluster.api.dropWatches('end');
    const failed = await agent.waitForLog('ConfigMap list or watch failed; retrying');
    expect(failed['reason']).not.toMatch(/cannot reach the API server/);
    expect(failed['reason']).toMatch(/ENOENT.*token/);
  });

  it('authenticates with a token file ending in a newline, as kubectl create secret --from-file leaves it', async () => {
    const { agent, server } = await startAgent(['alpha'], { token: `${goodToken}\n` });
    await agent.waitForLog(loadedLine('alpha'), 10_000);
    expect(server.loaded.has('alpha')).toBe(true);
    expect(agent.logs.some((log) => log['msg'] === 'ConfigMap list or watch failed; retrying')).toBe(false);
  });

  it('refuses a token with whitespace inside clearly, never sending or logging it', async () => {
    const split = 'split-token-3c9e71 second-half-a8d2';
    const { agent } = await startAgent(['alpha'], { token: split });
    const refused = await agent.waitForLog('ConfigMap list or watch failed; retrying');
    expect(refused['reason']).toMatch(
      /token file of kubeconfig user modelsync \S+ holds whitespace \(U\+0020\) at character 19/,
    );
    const everything = agent.stderr.text + agent.stdout.text;
    expect(everything).not.toContain('split-token-3c9e71');
    expect(everything).not.toContain('second-half-a8d2');
  });

  it('re-establishes a watch that stalls on a half-open connection', async () => {
    const { agent, cluster, server } = await startAgent(['alpha'], { flags: { 'watch-timeout-s': 1 } });
    await agent.waitForLog(loadedLine('alpha'));
    cluster.api.hangWatches(true);
    cluster.api.dropWatches('reset');
    await agent.waitForLog('ConfigMap watch made no progress; re-establishing it', 10_000);
    cluster.api.hangWatches(false);
    cluster.api.dropWatches('reset');
    cluster.api.apply(models('alpha', 'beta'));
    await waitFor(() => server.loaded.has('beta'), 10_000, 'beta loaded after the stall');
  });

  it('re-opens at once each watch that reached its timeout on an API server that sends no bookmarks: no stall said, no re-list', async () => {
    const { agent, cluster, server } = await startAgent(['alpha'], { flags: { 'watch-timeout-s': 1 } });
    cluster.api.withholdBookmarks(true);
    await agent.waitForLog(loadedLine('alpha'));
    // The client's ListWatch waits 1, 2, 4 … 30 s before re-opening a watch that ended without an event: by the
    // fourth, longer than a 1 s watch's stall window (2 s).
    await sleep(10_000);
    expect(
      agent.logs.filter((log) => log.msg === 'ConfigMap watch made no progress; re-establishing it'),
    ).toEqual([]);
    expect(cluster.api.requests.filter((request) => request.kind === 'list')).toHaveLength(1);
    expect(cluster.api.requests.filter((request) => request.kind === 'watch').length).toBeGreaterThanOrEqual(
      6,
    );
    cluster.api.apply(models('alpha', 'beta'));
    await waitFor(() => server.loaded.has('beta'), 10_000, 'beta loaded');
  });

  it('re-lists once a watch resumed after a failure sits a whole timeout silent (etcd restored: its versions went back)', async () => {
    const port = await freePort();
    const { agent, cluster, server } = await startAgent(['alpha'], {
      flags: { 'watch-timeout-s': 3, 'http-port': port },
    });
    await agent.waitForLog(loadedLine('alpha'));
    await waitFor(() => cluster.api.openWatches() === 1, 10_000, 'an open watch');
    for (let i = 0; i < 5; i++) cluster.api.bookmark(); // other objects moved the store on: version 7
    await waitFor(
      async () =>
        (await getJson<StatusDocumentJson>(port, surfacePaths.status)).json.config.watch?.[
          'lastSeenResourceVersion'
        ] === '7',
      10_000,
      'version 7 seen',
    );
    // The servers restart on an older backup: the ConfigMap comes back at version 3, below the agent's 7.
    cluster.api.restore(3, models('alpha', 'beta'));
    await waitFor(() => server.loaded.has('beta'), 30_000, 'beta loaded after the restore');
    expect(
      agent.logs
        .filter((log) => log.msg === 'ConfigMap list or watch failed; retrying')
        .map((log) => log['then']),
    ).toContain('re-list');
  });

  it('re-opens at once a watch of a bookmarking server that brought a bookmark, however quiet: no re-list', async () => {
    const { agent, cluster } = await startAgent(['alpha'], { flags: { 'watch-timeout-s': 3 } });
    await agent.waitForLog(loadedLine('alpha'));
    await sleep(10_000); // three watches, each with its BOOKMARK 2 s before the end (here: at once)
    expect(cluster.api.requests.filter((request) => request.kind === 'list')).toHaveLength(1);
    expect(agent.logs.filter(atLeast('warn'))).toEqual([]);
  });

  it('converges on the last of 200 rapid MODIFIEDs', async () => {
    const { agent, cluster, server } = await startAgent(['alpha']);
    await agent.waitForLog(loadedLine('alpha'));
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    for (let i = 0; i < 200; i++)
      cluster.api.apply(models(names[i % names.length]!, names[(i + 1) % names.length]!));
    const last = [names[199 % 4]!, names[200 % 4]!].sort();
    await waitFor(
      () =>
        [...server.loaded].sort().join() === last.join() &&
        server.loads.length === server.requests.filter((r) => r.path.endsWith('/load')).length,
      20_000,
      () => `loaded ${[...server.loaded].join()}, want ${last.join()}`,
    );
    await agent.waitForQuiet(500);
    expect([...server.loaded].sort()).toEqual(last);
  });

  it('--dry-run prints the ops from the ConfigMap, live and with --once', async () => {
    const cluster = await startKubeApiCluster(tmp.path);
    afterDryRun = () => cluster.api.close();
    cluster.api.apply(models('alpha'));
    const once = await runCli(cliArgs({ ...cluster.flags, 'dry-run': true, once: true }), {
      env: cluster.env,
    });
    expect(once.code).toBe(0);
    expect(once.stdout.lines.map((line) => JSON.parse(line) as { modelName: string })).toMatchObject([
      { modelName: 'alpha' },
    ]);
    const live = startCli(cliArgs({ ...cluster.flags, 'dry-run': true }), { env: cluster.env });
    await live.waitForStdoutLines(1);
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    cluster.api.apply(models('beta'));
    const lines = await live.waitForStdoutLines(3);
    expect(lines.slice(1).map((line) => JSON.parse(line) as { op: string; modelName: string })).toMatchObject(
      [
        { op: 'Remove', modelName: 'alpha' },
        { op: 'Add', modelName: 'beta' },
      ],
    );
  });
});
