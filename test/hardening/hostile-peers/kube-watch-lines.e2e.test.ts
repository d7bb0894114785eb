/**
 * An API server whose watch sends lines no real one sends — an event without an object, an object without
 * metadata, a type that does not exist, JSON that is no event — on the real process (`dist/cli.js`, the real
 * @kubernetes/client-node): each ends that watch as failed (one log line), the agent stays up, keeps what it
 * loaded, and takes the next good ConfigMap version through a new watch. A line that never ends is cut at its
 * bound; a watch answered with a redirect is not followed, so the token never reaches where it points.
 */
import fc from 'fast-check';
import { startHttpServer } from '../../../src/testing/http-server';
import { waitFor } from '../../../src/testing/wait';
import { killAllCli } from '../../helpers/cli-process';
import { recording } from '../../helpers/elsewhere';
import { useKubeAgent } from '../../helpers/kube-agent';
import { goodToken, modelsJson, type KubeApiCluster } from '../../helpers/kube-api';
import { atLeast } from '../../helpers/log-sink';
import { useTempDir } from '../../helpers/temp-dir';

jest.setTimeout(60_000);
afterEach(killAllCli);
const tmp = useTempDir('kube-watch-lines');

const kube = useKubeAgent(tmp);

/** Lines a broken or hostile API server may send on a watch. */
const fixedLines = [
  '{"type":"MODIFIED"}',
  '{"type":"ADDED","object":null}',
  '{"type":"MODIFIED","object":{"data":{"models.json":"[]"}}}',
  '{"type":"MODIFIED","object":{"metadata":"models"}}',
  '{"type":"DELETED","object":[]}',
  '{"type":"UPSERTED","object":{"metadata":{"name":"models","resourceVersion":"9"}}}',
  '{"type":null,"object":{}}',
  '[]',
  '"MODIFIED"',
  '{"type":"BOOKMARK","object":7}',
];

/** More of them: events with any type and any object, as fast-check draws them. */
const drawnLines = fc.sample(
  fc
    .record({
      type: fc.oneof(
        fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'),
        fc.string(),
        fc.integer(),
      ),
      object: fc.oneof(
        fc.constant(null),
        fc.integer(),
        fc.string(),
        fc.constant({}),
        fc.object({ maxDepth: 2 }),
      ),
    })
    .map((event) => JSON.stringify(event)),
  { numRuns: 10, seed: 17 },
);

/** The stand-ins and an agent watching the ConfigMap, which lists alpha; storage holds alpha and beta. */
const startAgent = async () => {
  const { agent, cluster, server } = await kube.start({ names: ['alpha', 'beta'], initial: ['alpha'] });
  await agent.waitForLog('start-up sync complete; ready');
  return { agent, api: cluster.api, storage: kube.storage(), server };
};

/** The number of watch requests the stand-in has had. */
const watchesOf = (api: KubeApiCluster['api']): number =>
  api.requests.filter((request) => request.kind === 'watch').length;

it('survives every line no API server sends, and takes the next good version through a new watch', async () => {
  const { agent, api, storage, server } = await startAgent();
  for (const line of [...fixedLines, ...drawnLines]) {
    await waitFor(() => api.openWatches() === 1, 10_000, 'an open watch');
    const watches = watchesOf(api);
    api.sendRaw(`${line}\n`);
    // Events that are valid but not ours (a real ERROR Status, say) may keep the watch; the others end it.
    await waitFor(
      () => watchesOf(api) > watches || agent.child.exitCode !== null,
      2_000,
      `a new watch after ${line}`,
    ).catch(() => undefined);
    expect({ line, exitCode: agent.child.exitCode }).toEqual({ line, exitCode: null });
  }
  expect(
    agent.logs.some((log) => JSON.stringify(log).includes('sent a MODIFIED event without an object')),
  ).toBe(true);
  expect([...server.loaded]).toEqual(['alpha']);
  api.apply({ 'models.json': modelsJson(storage, ['alpha', 'beta']) });
  await waitFor(() => server.loaded.has('beta'), 10_000, 'beta loaded from the next good version');
  expect(agent.child.exitCode).toBeNull();
  expect(agent.logs.filter(atLeast('error'))).toEqual([]);
});

it('cuts a line that never ends at its bound, and takes the next version through a new watch', async () => {
  const { agent, api, storage, server } = await startAgent();
  await waitFor(() => api.openWatches() === 1, 10_000, 'an open watch');
  const watches = watchesOf(api);
  const chunk = `{"type":"MODIFIED","object":{"metadata":{"name":"models"},"data":{"x":"${'a'.repeat(2 ** 20)}`;
  for (let i = 0; i < 12; i++) api.sendRaw(chunk);
  await waitFor(() => watchesOf(api) > watches, 20_000, 'a new watch after the endless line');
  expect(agent.logs.some((log) => JSON.stringify(log).includes('a line of more than 8388608 bytes'))).toBe(
    true,
  );
  api.apply({ 'models.json': modelsJson(storage, ['alpha', 'beta']) });
  await waitFor(() => server.loaded.has('beta'), 10_000, 'beta loaded from the next good version');
  expect(agent.child.exitCode).toBeNull();
});

it('does not follow a watch redirected elsewhere: the token never gets there, and the watch comes back', async () => {
  const elsewhere = recording((_req, res) => void res.writeHead(200).end('{}\n'));
  const other = await startHttpServer(elsewhere.handler);
  try {
    const { agent, api, storage, server } = await startAgent();
    await waitFor(() => api.openWatches() === 1, 10_000, 'an open watch');
    const watches = watchesOf(api);
    api.redirectWatches(other.url);
    api.dropWatches('end');
    await waitFor(
      () => api.requests.filter((request) => request.status === 307).length >= 2,
      10_000,
      'two redirected watches',
    );
    expect(elsewhere.heard).toEqual([]);
    expect(
      agent.logs.some((log) => JSON.stringify(log).includes('a redirect (HTTP 307), not followed')),
    ).toBe(true);
    api.redirectWatches(undefined);
    await waitFor(() => watchesOf(api) > watches + 2 && api.openWatches() === 1, 20_000, 'the watch back');
    api.apply({ 'models.json': modelsJson(storage, ['alpha', 'beta']) });
    await waitFor(() => server.loaded.has('beta'), 10_000, 'beta loaded after the redirects');
    expect(JSON.stringify(agent.logs)).not.toContain(goodToken);
  } finally {
    await other.close();
  }
});
