/**
 * Liveness with `--source kube-api` on the real process: `/healthz` means "restarting me would help". A quiet
 * watch and an API server that is down are no reason to restart (the watch retries by itself); `/status` says the
 * source is unreachable meanwhile, and the change after the outage is applied.
 */
import type { StatusDocumentJson } from '../../src/core/status-document';
import { surfacePaths } from '../../src/surface/http-surface';
import type { V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { killAllCli, type CliProcess } from '../helpers/cli-process';
import type { KubeApiCluster } from '../helpers/kube-api';
import { useTempDir } from '../helpers/temp-dir';
import { useKubeAgent } from '../helpers/kube-agent';
import { freePort, get, getJson } from './surface-kit';

afterEach(killAllCli);
const tmp = useTempDir('kube-api-liveness');

const stallMs = 1000; // --watch-stall-ms

describe('/healthz with --source kube-api', () => {
  const kube = useKubeAgent(tmp);
  const { models } = kube;

  const startAgent = async (): Promise<{
    agent: CliProcess;
    port: number;
    cluster: KubeApiCluster;
    server: V2ModelServerStandIn;
  }> => {
    const port = await freePort();
    const { agent, cluster, server } = await kube.start({
      names: ['alpha', 'beta'],
      initial: ['alpha'],
      flags: { 'http-port': port, 'watch-stall-ms': stallMs },
    });
    await agent.waitForLog('start-up sync complete; ready');
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    return { agent, port, cluster, server };
  };

  /** /healthz's status at every tenth of the stall window for `ms`. */
  const healthOver = async (port: number, ms: number): Promise<ReadonlySet<number>> => {
    const seen = new Set<number>();
    for (const end = Date.now() + ms; Date.now() < end; await sleep(stallMs / 10))
      seen.add((await get(port, surfacePaths.healthz)).status);
    return seen;
  };

  it('stays 200 on a healthy watch that is quiet for twice the stall window', async () => {
    const { port } = await startAgent();
    expect([...(await healthOver(port, 2 * stallMs + 500))]).toEqual([200]);
  });

  it('keeps a watch quiet for longer than 30 s (the API server bookmarks once a minute): no failure said, no second watch, the next edit applied', async () => {
    const { agent, port, cluster, server } = await startAgent();
    await sleep(35_000);
    expect(cluster.api.requests.filter((request) => request.kind === 'watch')).toHaveLength(1);
    expect(agent.logs.filter((log) => log.msg === 'ConfigMap list or watch failed; retrying')).toEqual([]);
    const { json } = await getJson<StatusDocumentJson>(port, surfacePaths.status);
    expect(json.config.watch?.['lastFailure']).toBeUndefined();
    cluster.api.apply(models('alpha', 'beta'));
    await waitFor(() => server.loaded.has('beta'), 10_000, 'beta loaded');
  });

  it('stays 200 while the API server is down, /status says it is unreachable, and applies the change after', async () => {
    const { port, cluster: down, server } = await startAgent();
    down.api.setDown(true);
    const healthDuringOutage = healthOver(port, 2 * stallMs + 500);
    await waitFor(
      async () => {
        const { json } = await getJson<StatusDocumentJson>(port, surfacePaths.status);
        return json.config.watch?.['unreachableSince'] !== undefined;
      },
      10_000,
      '/status naming the API server unreachable',
    );
    const { json } = await getJson<StatusDocumentJson>(port, surfacePaths.status);
    expect(json.config.watch?.['lastFailure']).toEqual(expect.any(String));
    expect((await get(port, surfacePaths.readyz)).status).toBe(200);
    expect([...(await healthDuringOutage)]).toEqual([200]);
    down.api.setDown(false);
    down.api.apply(models('alpha', 'beta'));
    await waitFor(() => server.loaded.has('beta'), 15_000, 'beta loaded after the outage');
    expect((await get(port, surfacePaths.healthz)).status).toBe(200);
  });
});
