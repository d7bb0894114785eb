/**
 * An API server whose watch sends lines no real one sends — an event without an object, an object without
 * metadata, a type that does not exist, JSON that is no event — on the real process (`dist/cli.js`, the real
 * @kubernetes/client-node): each ends that watch as failed (one log line), the agent stays up, keeps what it
 * loaded, and takes the next good ConfigMap version through a new watch.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { waitFor } from '../../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../../helpers/cli-process';
import { writeFiles } from '../../helpers/file-tree';
import { modelsJson, startKubeApiCluster, type KubeApiCluster } from '../../helpers/kube-api';
import { useTempDir } from '../../helpers/temp-dir';

jest.setTimeout(60_000);
afterEach(killAllCli);
const tmp = useTempDir('kube-watch-lines');

let cluster: KubeApiCluster | undefined;
let server: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await cluster?.api.close();
  await server?.close();
  cluster = server = undefined;
});

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

it('survives every line no API server sends, and takes the next good version through a new watch', async () => {
  const storage = join(tmp.path, 'pvc');
  const names = ['alpha', 'beta'];
  await writeFiles(storage, Object.fromEntries(names.map((name) => [`${name}/model.bin`, name])));
  const modelDir = join(tmp.path, 'models');
  mkdirSync(modelDir);
  cluster = await startKubeApiCluster(tmp.path);
  cluster.api.apply({ 'models.json': modelsJson(storage, ['alpha']) });
  server = await startV2ModelServer({ modelDir });
  const agent = startCli(
    cliArgs({
      ...cluster.flags,
      'model-dir': modelDir,
      'server-url': server.url,
      'local-storage-roots': storage,
      'retry-base-ms': 20,
      'retry-max-ms': 100,
    }),
    { env: cluster.env },
  );
  await agent.waitForLog('start-up sync complete; ready');
  const api = cluster.api;
  for (const line of [...fixedLines, ...drawnLines]) {
    await waitFor(() => api.openWatches() === 1, 10_000, 'an open watch');
    const watches = api.requests.filter((request) => request.kind === 'watch').length;
    api.sendRaw(`${line}\n`);
    // Events that are valid but not ours (a real ERROR Status, say) may keep the watch; the others end it.
    await waitFor(
      () =>
        api.requests.filter((request) => request.kind === 'watch').length > watches ||
        agent.child.exitCode !== null,
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
  await waitFor(() => server!.loaded.has('beta'), 10_000, 'beta loaded from the next good version');
  expect(agent.child.exitCode).toBeNull();
  expect(agent.logs.filter((log) => Number(log['level']) >= 50)).toEqual([]);
});
