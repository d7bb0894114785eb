/**
 * `--source kube-api` on the real process against a real API server (etcd and kube-apiserver built from the Go
 * module proxy: ./control-plane.ts), with exactly the RBAC of deploy/overlays/triton-kube-api rendered by the real
 * kustomize: a Role limited by `resourceNames`, a ServiceAccount, a TokenRequest token. The model server is the V2
 * stand-in (the subject here is the API server). Each test takes a namespace of its own.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { cliArgs, startCli, type CliProcess } from '../helpers/cli-process';
import { renderKustomization, type KubeObject } from '../deploy/kustomize';
import { writeFiles } from '../helpers/file-tree';
import { modelsJson } from '../helpers/kube-api';
import type { LogLine } from '../helpers/log-sink';
import { removeTempDir, useTempDir } from '../helpers/temp-dir';
import { repoRoot } from '../real-servers/paths';
import { inNamespace, useControlPlane, useV2StandIn, writeKubeconfig } from './control-plane';
import { freePort, get } from '../integration/surface-kit';
import { surfacePaths } from '../../src/surface/http-surface';

jest.setTimeout(120_000);
const tmp = useTempDir('real-kube-api');
const controlPlane = useControlPlane();
const v2StandIn = useV2StandIn();

const overlay = renderKustomization(join(repoRoot, 'deploy', 'overlays', 'triton-kube-api'));
const ofKind = (kind: string): KubeObject[] => overlay.filter((object) => object.kind === kind);
const [configMap] = ofKind('ConfigMap');
const modelsyncEnv = Object.fromEntries(
  (
    ofKind('Deployment')[0] as unknown as {
      spec: {
        template: {
          spec: { containers: Array<{ name: string; env?: Array<{ name: string; value?: string }> }> };
        };
      };
    }
  ).spec.template.spec.containers
    .find((container) => container.name === 'modelsync')!
    .env!.filter((env) => env.name === 'MODELSYNC_SOURCE' || env.name === 'MODELSYNC_CONFIGMAP')
    .map((env) => [env.name, env.value!]),
);

const storage = (): string => join(tmp.path, 'pvc');
const names = ['alpha', 'beta', 'gamma'];

/** The overlay's ConfigMap in `namespace`, listing `models`. */
const modelsConfigMap = (namespace: string, ...models: string[]): KubeObject =>
  inNamespace({ ...configMap!, data: { 'models.json': modelsJson(storage(), models) } }, namespace);

/** A namespace with the overlay's ServiceAccount, Role and RoleBinding, and its ConfigMap listing `models`. */
const deployed = async (...models: string[]): Promise<string> => {
  const namespace = await controlPlane.plane.namespace('models');
  const rbac = [...ofKind('ServiceAccount'), ...ofKind('Role'), ...ofKind('RoleBinding')];
  await controlPlane.plane.apply(
    ...rbac.map((object) => inNamespace(object, namespace)),
    modelsConfigMap(namespace, ...models),
  );
  return namespace;
};

/** A TokenRequest token of `serviceAccount` in `namespace`, as the kubelet's projected volume would hold it. */
const tokenOf = async (namespace: string, serviceAccount = 'modelsync'): Promise<string> =>
  (
    await controlPlane.plane.kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration=1h'])
  ).trim();

/** The real CLI watching the overlay's ConfigMap through `kubeconfig`, beside a fresh V2 stand-in. */
const startAgent = async (
  kubeconfig: string,
  flags: Readonly<Record<string, string | number>> = {},
  options: { readonly env?: Readonly<Record<string, string>>; readonly within?: ReadonlyArray<string> } = {},
): Promise<{ agent: CliProcess; server: V2ModelServerStandIn }> => {
  await writeFiles(storage(), Object.fromEntries(names.map((name) => [`${name}/model.bin`, name])));
  const modelDir = join(tmp.path, 'models');
  await mkdir(modelDir);
  const server = await v2StandIn.start(modelDir);
  const agent = startCli(
    cliArgs({
      'model-dir': modelDir,
      'server-url': server.url,
      'local-storage-roots': storage(),
      'retry-base-ms': 50,
      'retry-max-ms': 500,
      ...flags,
    }),
    {
      env: { ...modelsyncEnv, KUBECONFIG: kubeconfig, ...options.env },
      ...(options.within ? { within: options.within } : {}),
    },
  );
  return { agent, server };
};

/**
 * The overlay's RBAC in a fresh namespace listing alpha, and the real CLI on it with a TokenRequest token as
 * `token` in its kubeconfig, its surface on a free port; resolves once its start-up sync is done.
 */
const readyWithToken = async (flags: Readonly<Record<string, string | number>> = {}) => {
  const namespace = await deployed('alpha');
  const kubeconfig = writeKubeconfig(
    join(tmp.path, 'kubeconfig'),
    controlPlane.plane,
    { token: await tokenOf(namespace) },
    namespace,
  );
  const port = await freePort();
  const started = await startAgent(kubeconfig, { 'http-port': port, ...flags });
  await started.agent.waitForLog('start-up sync complete; ready', 30_000);
  return { ...started, namespace, port };
};

/** What the agent's /metrics says of `modelsync_config_<name>_total`. */
const counted = async (port: number, name: 'relists' | 'watch_restarts'): Promise<number> => {
  const { body } = await get(port, surfacePaths.metrics);
  const line = new RegExp(`^modelsync_config_${name}_total (\\d+)$`, 'm').exec(body);
  if (line === null) throw new Error(`no modelsync_config_${name}_total in /metrics`);
  return Number(line[1]);
};

const loadedLine = (model: string) => (log: LogLine) =>
  log['msg'] === 'model loaded' && log['model'] === model;
const failure = 'ConfigMap list or watch failed; retrying';
const unloads = (standIn: V2ModelServerStandIn): number =>
  standIn.requests.filter((request) => request.path.endsWith('/unload')).length;

describe('--source kube-api against a real API server, with the RBAC of deploy/', () => {
  it("reads the ConfigMap through the overlay's Role (resourceNames) with a TokenRequest token in kubectl's tokenFile: loads, follows edits, keeps the models through a delete, takes the re-created one", async () => {
    expect(modelsyncEnv).toEqual({
      MODELSYNC_SOURCE: 'kube-api',
      MODELSYNC_CONFIGMAP: configMap!.metadata.name,
    });
    const namespace = await deployed('alpha');
    const tokenFile = join(tmp.path, 'token');
    writeFileSync(tokenFile, await tokenOf(namespace));
    const kubeconfig = writeKubeconfig(
      join(tmp.path, 'kubeconfig'),
      controlPlane.plane,
      { tokenFile },
      namespace,
    );
    const { agent, server: standIn } = await startAgent(kubeconfig);
    await agent.waitForLog('start-up sync complete; ready', 30_000);
    expect([...standIn.loaded]).toEqual(['alpha']);

    await controlPlane.plane.apply(modelsConfigMap(namespace, 'alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'), 10_000);

    await controlPlane.plane.kubectl(['delete', 'configmap', configMap!.metadata.name, '-n', namespace]);
    await agent.waitForLog((log) => /ConfigMap does not exist/.test(String(log['reason'])), 10_000);
    expect(unloads(standIn)).toBe(0);

    await controlPlane.plane.apply(modelsConfigMap(namespace, 'beta', 'gamma'));
    await agent.waitForLog(loadedLine('gamma'), 10_000);
    await waitFor(() => !standIn.loaded.has('alpha'), 10_000, 'alpha unloaded');
    expect([...standIn.loaded].sort()).toEqual(['beta', 'gamma']);
    expect(agent.logs.filter((log) => log['msg'] === failure)).toEqual([]);
  });

  it('with `token` in the kubeconfig, carries on after the API server is killed mid-watch and after it is restarted: the edits made meanwhile are applied, nothing is unloaded', async () => {
    const { agent, server: standIn, namespace, port } = await readyWithToken();

    await controlPlane.plane.restartApiServer('SIGKILL', { downMs: 1000 });
    await controlPlane.plane.apply(modelsConfigMap(namespace, 'alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'), 30_000);
    expect(await counted(port, 'watch_restarts')).toBeGreaterThanOrEqual(1);

    await controlPlane.plane.restartApiServer('SIGTERM');
    await controlPlane.plane.apply(modelsConfigMap(namespace, 'alpha', 'beta', 'gamma'));
    await agent.waitForLog(loadedLine('gamma'), 30_000);
    expect(unloads(standIn)).toBe(0);
    expect([...standIn.loaded].sort()).toEqual(['alpha', 'beta', 'gamma']);
  });

  it('tells a ServiceAccount the Role does not name apart from a request that carried no token (403 as system:anonymous)', async () => {
    const namespace = await deployed('alpha');
    await controlPlane.plane.kubectl(['create', 'serviceaccount', 'stranger', '-n', namespace]);
    const stranger = writeKubeconfig(
      join(tmp.path, 'stranger.kubeconfig'),
      controlPlane.plane,
      { token: await tokenOf(namespace, 'stranger') },
      namespace,
    );
    const { agent } = await startAgent(stranger);
    const refused = await agent.waitForLog(failure, 30_000);
    expect(refused['reason']).toBe(
      `the API server forbade it to system:serviceaccount:${namespace}:stranger (403 Forbidden): ` +
        'the Role bound to that user must allow get, list and watch on this ConfigMap (resourceNames)',
    );
    await v2StandIn.stopAll();

    const anonymous = writeKubeconfig(
      join(tmp.path, 'anonymous.kubeconfig'),
      controlPlane.plane,
      {},
      namespace,
    );
    await removeTempDir(join(tmp.path, 'models'));
    const { agent: second } = await startAgent(anonymous);
    const noToken = await second.waitForLog(failure, 30_000);
    expect(noToken['reason']).toMatch(
      /^no credentials were sent \(the API server answered 403 Forbidden to an anonymous request\)/,
    );
  });

  it('re-opens each watch the API server ends at --watch-timeout-s from the bookmark before its end, never re-listing', async () => {
    const { agent, namespace, port } = await readyWithToken({ 'watch-timeout-s': 3 });
    // Other objects move the store on, so each bookmark carries a newer version than the ConfigMap's.
    for (let i = 0; i < 3; i++)
      await controlPlane.plane.apply({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `other-${i}`, namespace },
        data: {},
      });
    await waitFor(
      async () => (await counted(port, 'watch_restarts')) >= 3,
      30_000,
      'three watches ended and re-opened',
    );
    expect(await counted(port, 'relists')).toBe(0);
    await controlPlane.plane.apply(modelsConfigMap(namespace, 'alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'), 10_000);
    expect(agent.logs.filter((log) => log['msg'] === failure)).toEqual([]);
  });

  it("re-lists when etcd's history was compacted past its version while the API server was down (410 Gone), and applies the next edit", async () => {
    const { agent, server: standIn, namespace, port } = await readyWithToken();
    for (let i = 0; i < 3; i++)
      await controlPlane.plane.apply({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `other-${i}`, namespace },
        data: { i: String(i) },
      });
    await controlPlane.plane.compactEtcd();
    // The restarted API server's watch cache starts at the newest version: the watch's resume reaches etcd, compacted.
    await controlPlane.plane.restartApiServer('SIGKILL');
    await waitFor(async () => (await counted(port, 'relists')) >= 1, 30_000, 'a re-list after 410 Gone');
    await controlPlane.plane.apply(modelsConfigMap(namespace, 'alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'), 10_000);
    expect(unloads(standIn)).toBe(0);
  });

  it("in a pod: reads the service account mount at its fixed path (the overlay's projected token, ca.crt and namespace) and KUBERNETES_SERVICE_HOST/PORT", async () => {
    const namespace = await deployed('alpha');
    const mount = join(tmp.path, 'serviceaccount');
    await writeFiles(mount, {
      token: await tokenOf(namespace),
      'ca.crt': readFileSync(controlPlane.plane.caFile, 'utf8'),
      namespace,
    });
    // The kubelet's mount, in a mount namespace of the agent's own (a user namespace: no privilege needed).
    const serviceAccountDir = '/run/secrets/kubernetes.io/serviceaccount';
    const within = [
      'unshare',
      '-rm',
      'sh',
      '-c',
      `mount -t tmpfs none /run && mkdir -p ${serviceAccountDir} && mount --bind "$0" ${serviceAccountDir} && exec "$@"`,
      mount,
    ];
    const { port } = new URL(controlPlane.plane.url);
    const { agent, server: standIn } = await startAgent(
      '',
      {},
      {
        env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        within,
      },
    );
    await agent.waitForLog('start-up sync complete; ready', 30_000);
    expect([...standIn.loaded]).toEqual(['alpha']);
    await controlPlane.plane.apply(modelsConfigMap(namespace, 'alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'), 10_000);
  });
});
