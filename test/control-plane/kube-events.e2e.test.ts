/**
 * Kubernetes Events on the agent's own Pod against a real API server: the real CLI (watching a kubelet-style config
 * dir) with exactly the RBAC of deploy/components/kube-events (create and patch on events, nothing else), its Pod
 * named by POD_NAME/POD_NAMESPACE/POD_UID as the downward API sets them; what `kubectl get events` and `kubectl
 * describe pod` then show. And a service account without that Role: one warning naming the RBAC, no more attempts,
 * every model still loaded. And a CA file put right after a write failed on it: the next event is written.
 */
import { readFileSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { waitFor } from '../../src/testing/wait';
import { cliArgs, startCli, type CliProcess } from '../helpers/cli-process';
import { renderKustomization } from '../deploy/kustomize';
import { variants, withVariantDir } from '../deploy/variants';
import { writeFiles } from '../helpers/file-tree';
import { modelsJson } from '../helpers/kube-api';
import type { LogLine } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { inNamespace, useControlPlane, useV2StandIn, writeKubeconfig } from './control-plane';

jest.setTimeout(120_000);
const tmp = useTempDir('real-kube-events');
const controlPlane = useControlPlane();
const v2StandIn = useV2StandIn();

const variant = variants.find((candidate) => candidate.name === 'mlserver + kube-events')!;
const rbac = withVariantDir(variant, (dir) => renderKustomization(dir)).filter((object) =>
  ['ServiceAccount', 'Role', 'RoleBinding'].includes(object.kind),
);

const storage = (): string => join(tmp.path, 'pvc');
const configDir = (): string => join(tmp.path, 'configs');
const pod = 'model-serving-7d9f8-abcde';

/**
 * The Pod `pod` in `namespace`, as its ReplicaSet would make it (no kubelet runs it): resolves with its uid, which
 * the downward API gives as POD_UID.
 */
const createPod = async (namespace: string, name = pod): Promise<string> => {
  await controlPlane.plane.apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      serviceAccountName: 'modelsync',
      automountServiceAccountToken: false,
      containers: [{ name: 'modelsync', image: 'modelsync' }],
    },
  });
  return (
    await controlPlane.plane.kubectl(['get', 'pod', name, '-n', namespace, '-o', 'jsonpath={.metadata.uid}'])
  ).trim();
};

/** The real CLI on a config dir listing `models`, with `options` (its env, and what it runs within). */
const startCliOn = async (
  models: ReadonlyArray<string>,
  options: { readonly env: Readonly<Record<string, string>>; readonly within?: string[] },
): Promise<CliProcess> => {
  await writeFiles(storage(), { 'alpha/model.bin': 'a', 'beta/model.bin': 'b' });
  await mkdir(join(tmp.path, 'models'));
  atomicWrite(configDir(), { 'models.json': modelsJson(storage(), models) });
  const server = await v2StandIn.start(join(tmp.path, 'models'));
  return startCli(
    cliArgs({
      'config-dir': configDir(),
      'model-dir': join(tmp.path, 'models'),
      'server-url': server.url,
      'local-storage-roots': storage(),
      'retry-base-ms': 50,
      'retry-max-ms': 200,
      'max-attempts': 2,
    }),
    options,
  );
};

/**
 * The real CLI on a config dir listing `models`, writing Events as Pod `pod` (uid `uid`) of `namespace` with `token`,
 * trusting the CA in `caFile` (the kubeconfig's `certificate-authority`).
 */
const startAgent = async (
  namespace: string,
  token: string,
  uid: string,
  models: ReadonlyArray<string>,
  caFile = controlPlane.plane.caFile,
): Promise<CliProcess> => {
  const plane = { url: controlPlane.plane.url, caFile };
  const kubeconfig = writeKubeconfig(join(tmp.path, 'kubeconfig'), plane, { token }, namespace);
  return startCliOn(models, {
    env: { KUBECONFIG: kubeconfig, POD_NAME: pod, POD_NAMESPACE: namespace, POD_UID: uid },
  });
};

interface ShownEvent {
  readonly reason: string;
  readonly type: string;
  readonly message: string;
  readonly count: number;
  readonly involvedObject: { readonly kind: string; readonly name: string };
  readonly source: { readonly component: string };
}

/** The events `kubectl get events` shows about the Pod. */
const eventsOf = async (namespace: string): Promise<ShownEvent[]> =>
  (
    JSON.parse(
      await controlPlane.plane.kubectl([
        'get',
        'events',
        '-n',
        namespace,
        '--field-selector',
        `involvedObject.name=${pod}`,
        '-o',
        'json',
      ]),
    ) as { items: ShownEvent[] }
  ).items;

const loadedLine = (model: string) => (log: LogLine) =>
  log['msg'] === 'model loaded' && log['model'] === model;

describe('Kubernetes Events on the agent’s Pod, against a real API server', () => {
  it('shows a model loaded, failed and unloaded and a config rejected (counted up when it repeats), with the RBAC of deploy/components/kube-events', async () => {
    const namespace = await controlPlane.plane.namespace('events');
    await controlPlane.plane.apply(...rbac.map((object) => inNamespace(object, namespace)));
    const token = (
      await controlPlane.plane.kubectl(['create', 'token', 'modelsync', '-n', namespace])
    ).trim();
    const agent = await startAgent(namespace, token, await createPod(namespace), ['alpha', 'missing']);
    await agent.waitForLog(loadedLine('alpha'), 30_000);
    await waitFor(
      async () => (await eventsOf(namespace)).some((event) => event.reason === 'ModelFailed'),
      30_000,
      'a ModelFailed event',
    );
    // Two bad edits, the first made twice: each read is rejected, the repeat counted up on its first event.
    for (const bad of ['[{"modelName": ', '[{"modelName": "x", ', '[{"modelName": ']) {
      const since = agent.logs.length;
      atomicWrite(configDir(), { 'models.json': bad });
      await agent.waitForLog('config rejected; keeping the previous models', 10_000, since);
    }
    atomicWrite(configDir(), { 'models.json': modelsJson(storage(), ['beta']) });
    await agent.waitForLog(loadedLine('beta'), 30_000);
    // The recorder writes in the agent's order, which the loads and unloads of one edit do not fix: wait for all.
    const counts = async (): Promise<string> => {
      const all = await eventsOf(namespace);
      const count = (reason: string) => all.filter((event) => event.reason === reason).length;
      return ['ModelLoaded', 'ModelFailed', 'ModelUnloaded', 'ConfigRejected'].map(count).join(',');
    };
    await waitFor(async () => (await counts()) === '2,1,2,2', 30_000, 'every event written');
    const events = await eventsOf(namespace);
    const byReason = (reason: string) => events.filter((event) => event.reason === reason);
    expect(
      byReason('ModelLoaded')
        .map((event) => event.message)
        .sort(),
    ).toEqual([
      `model alpha loaded from ${join(storage(), 'alpha')}`,
      `model beta loaded from ${join(storage(), 'beta')}`,
    ]);
    expect(byReason('ModelFailed')).toEqual([
      expect.objectContaining({
        type: 'Warning',
        message: expect.stringMatching(/^model missing failed: /) as unknown,
      }),
    ]);
    expect(
      byReason('ModelUnloaded')
        .map((event) => event.message)
        .sort(),
    ).toEqual([
      'model alpha is no longer listed: unloaded, its files removed',
      'model missing is no longer listed: unloaded, its files removed',
    ]);
    const rejected = byReason('ConfigRejected');
    expect(rejected.map((event) => event.type)).toEqual(['Warning', 'Warning']);
    expect(rejected.map((event) => event.count).sort()).toEqual([1, 2]);
    for (const event of events) {
      expect(event.involvedObject).toMatchObject({ kind: 'Pod', name: pod });
      expect(event.source.component).toBe('modelsync');
    }
    expect(agent.logs.filter((log) => /Kubernetes Event/.test(String(log.msg)))).toEqual([]);
    // `kubectl describe pod` selects the Pod's events by its uid too: an Event naming none is not shown there.
    const described = await controlPlane.plane.kubectl(['describe', 'pod', pod, '-n', namespace]);
    for (const reason of ['ModelLoaded', 'ModelFailed', 'ModelUnloaded', 'ConfigRejected'])
      expect(described).toMatch(new RegExp(`${reason}\\s.*\\smodelsync\\s`));
  });

  it('without the Role: one warning naming the RBAC it needs, no more writes for 10 minutes, and every model loads as before', async () => {
    const namespace = await controlPlane.plane.namespace('no-events');
    await controlPlane.plane.kubectl(['create', 'serviceaccount', 'modelsync', '-n', namespace]);
    const token = (
      await controlPlane.plane.kubectl(['create', 'token', 'modelsync', '-n', namespace])
    ).trim();
    const agent = await startAgent(namespace, token, await createPod(namespace), ['alpha', 'beta']);
    await agent.waitForLog(loadedLine('beta'), 30_000);
    await agent.waitForLog(loadedLine('alpha'), 30_000);
    const refused = await agent.waitForLog(
      'the API server refused a Kubernetes Event; none is written for 10 minutes, then one is tried',
    );
    expect(refused['reason']).toBe(
      `the API server forbade it to system:serviceaccount:${namespace}:modelsync (403 Forbidden): the Role bound ` +
        "to the agent's service account must allow create and patch on events in the Pod's namespace " +
        '(deploy/components/kube-events), or run with --kube-events off',
    );
    atomicWrite(configDir(), { 'models.json': modelsJson(storage(), ['beta']) });
    await waitFor(() => !v2StandIn.server!.loaded.has('alpha'), 10_000, 'alpha unloaded');
    expect(agent.logs.filter((log) => /Kubernetes Event/.test(String(log.msg)))).toHaveLength(1);
    expect(await eventsOf(namespace)).toEqual([]);
  });

  it('reads the cluster settings anew after a failed write: a CA file put right makes the next event written', async () => {
    const namespace = await controlPlane.plane.namespace('events-ca');
    await controlPlane.plane.apply(...rbac.map((object) => inNamespace(object, namespace)));
    const token = (
      await controlPlane.plane.kubectl(['create', 'token', 'modelsync', '-n', namespace])
    ).trim();
    // At first the CA file holds the server's own certificate, no CA: the write fails on TLS.
    const caFile = join(tmp.path, 'ca.crt');
    await copyFile(join(dirname(controlPlane.plane.caFile), 'server.pem'), caFile);
    const agent = await startAgent(namespace, token, await createPod(namespace), ['alpha'], caFile);
    await agent.waitForLog('cannot write a Kubernetes Event; dropped (said once per 10 minutes)', 30_000);
    await copyFile(controlPlane.plane.caFile, caFile);
    atomicWrite(configDir(), { 'models.json': modelsJson(storage(), ['alpha', 'beta']) });
    await agent.waitForLog(loadedLine('beta'), 30_000);
    await waitFor(
      async () => (await eventsOf(namespace)).some((event) => event.message.startsWith('model beta loaded')),
      30_000,
      'the ModelLoaded event of beta',
    );
  });

  it("in a pod without POD_NAME (KServe's webhook sets none): names the Pod its token was issued for, not its hostname the kubelet cut to 63 characters", async () => {
    const namespace = await controlPlane.plane.namespace('events-token');
    await controlPlane.plane.apply(...rbac.map((object) => inNamespace(object, namespace)));
    // As KServe's serverless predictor pods are named: over 63 characters.
    const name = 'sklearn-iris-classifier-predictor-00001-deployment-7d9f8b6c4d-abcde';
    await createPod(namespace, name);
    // The kubelet's projected token is bound to the Pod, as `kubectl create token --bound-object-kind Pod` makes it.
    const bound = ['--bound-object-kind', 'Pod', '--bound-object-name', name];
    const token = await controlPlane.plane.kubectl([
      'create',
      'token',
      'modelsync',
      '-n',
      namespace,
      ...bound,
    ]);
    const mount = join(tmp.path, 'serviceaccount');
    await writeFiles(mount, {
      token: token.trim(),
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
    const hostname = name.slice(0, 63).replace(/[-.]+$/, '');
    const agent = await startCliOn(['alpha'], {
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port, HOSTNAME: hostname },
      within,
    });
    await agent.waitForLog(loadedLine('alpha'), 30_000);
    const described = async (): Promise<string> =>
      controlPlane.plane.kubectl(['describe', 'pod', name, '-n', namespace]);
    await waitFor(
      async () => /ModelLoaded\s.*\smodelsync\s/.test(await described()),
      30_000,
      'the event in kubectl describe pod',
    );
  });
});
