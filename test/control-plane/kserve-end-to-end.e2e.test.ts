/**
 * KServe end to end, as far as a machine without a kubelet allows: KServe's real controller and webhooks
 * (./kserve.ts) with modelsync's drop-in component, a multi-model InferenceService on an MLServer ServingRuntime,
 * TrainedModels whose ConfigMap the TrainedModel controller writes, a Pod made from the predictor's Deployment that
 * KServe's webhook mutates on admission — and then modelsync run with exactly the `agent` container's args and env
 * as injected (its secrets resolved as the kubelet would, its volumes bind-mounted at their paths in a mount
 * namespace of its own), beside a real MLServer, the models in s3rver behind the S3 secret KServe reads from the
 * service account. And the storage initializer KServe injects for a single-model InferenceService, run with
 * exactly its args and env.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { killAllCli, startCli, type CliProcess } from '../helpers/cli-process';
import { eventually } from '../helpers/eventually';
import { readFileBytes } from '../helpers/file-tree';
import { startS3Server, type S3Server } from '../helpers/s3-server';
import { removeTempDir, tempDir } from '../helpers/temp-dir';
import { freePort } from '../integration/surface-kit';
import { ensureRealServers } from '../real-servers/global-setup';
import { fixtureModel, infer } from '../real-servers/models';
import { startRealServer, type RealServer } from '../real-servers/servers';
import { useControlPlane } from './control-plane';
import { installKserve, type Kserve } from './kserve';
import { admittedPod, availableDeployment, envOf, kubectlJson, withMounts } from './kubelet';

jest.setTimeout(300_000);
const controlPlane = useControlPlane();
let kserve: Kserve | undefined;
let s3: S3Server;
let root: string;
let mlserver: RealServer | undefined;

/** Every file of a dir, by its path below it. */
beforeAll(() => ensureRealServers(['mlserver']), 15 * 60_000);
beforeAll(async () => {
  root = await tempDir('kserve-e2e');
  s3 = await startS3Server();
  await s3.createBucket('models');
  for (const variant of ['v1', 'v2'] as const) {
    const files = await readFileBytes(fixtureModel('mlserver', variant));
    await s3.put(
      'models',
      Object.fromEntries(
        Object.entries(files).map(([path, bytes]) => [`mlserver/${variant}/${path}`, bytes]),
      ),
    );
  }
  kserve = await installKserve(controlPlane.plane);
});
afterAll(async () => {
  await killAllCli();
  await mlserver?.stop();
  await kserve?.stop();
  await s3?.close();
  await removeTempDir(root);
});

/**
 * A namespace whose `default` ServiceAccount carries an S3 secret as KServe reads one (its annotations give the
 * endpoint), so that KServe's webhook injects the S3 credentials and endpoint into what it adds to a pod.
 */
const namespaceWithS3 = async (prefix: string): Promise<string> => {
  const { plane } = controlPlane;
  const namespace = await plane.namespace(prefix);
  const host = new URL(s3.url).host;
  await plane.apply(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 's3-models',
        namespace,
        annotations: {
          'serving.kserve.io/s3-endpoint': host,
          'serving.kserve.io/s3-usehttps': '0',
          'serving.kserve.io/s3-region': 'us-east-1',
        },
      },
      type: 'Opaque',
      stringData: { AWS_ACCESS_KEY_ID: s3.keys.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey },
    },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'default', namespace },
      secrets: [{ name: 's3-models' }],
    },
  );
  return namespace;
};

describe('KServe end to end with its real controller and webhooks, modelsync dropped in', () => {
  it('serves every TrainedModel through the injected agent beside a real MLServer, and unloads one deleted', async () => {
    const { plane } = controlPlane;
    const namespace = await namespaceWithS3('mms');
    const modelDir = join(root, 'models');
    const configDir = join(root, 'configs');
    await mkdir(modelDir);
    mlserver = await startRealServer('mlserver', { modelDir });
    const componentPort = Number(new URL(mlserver.url).port);
    await plane.apply(
      {
        apiVersion: 'serving.kserve.io/v1alpha1',
        kind: 'ServingRuntime',
        metadata: { name: 'mlserver-mms', namespace },
        spec: {
          multiModel: true,
          protocolVersions: ['v2'],
          supportedModelFormats: [{ name: 'sklearn', version: '1', autoSelect: true }],
          containers: [
            {
              name: 'kserve-container',
              image: 'docker.io/seldonio/mlserver:1.6.1',
              ports: [{ containerPort: componentPort, protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/v2/health/ready', port: componentPort } },
            },
          ],
        },
      },
      {
        apiVersion: 'serving.kserve.io/v1beta1',
        kind: 'InferenceService',
        metadata: { name: 'mms', namespace },
        spec: {
          predictor: {
            model: {
              modelFormat: { name: 'sklearn' },
              runtime: 'mlserver-mms',
              protocolVersion: 'v2',
              resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1', memory: '1Gi' } },
            },
          },
        },
      },
    );
    const deployment = await availableDeployment(plane, namespace, 'mms');
    const trainedModel = (name: string, variant: string) => ({
      apiVersion: 'serving.kserve.io/v1alpha1',
      kind: 'TrainedModel',
      metadata: { name, namespace },
      spec: {
        inferenceService: 'mms',
        model: { framework: 'sklearn', storageUri: `s3://models/mlserver/${variant}`, memory: '100Mi' },
      },
    });
    await plane.apply(trainedModel('iris-a', 'v1'), trainedModel('iris-b', 'v2'));
    const configMap = 'modelconfig-mms-0';
    const listed = async (): Promise<string[]> => {
      const found = await kubectlJson<{ data?: Record<string, string> }>(
        plane,
        `configmap/${configMap}`,
        '-n',
        namespace,
      ).catch(() => ({ data: undefined }));
      const models = JSON.parse(found.data?.['models.json'] ?? '[]') as Array<{ modelName: string }>;
      return models.map((model) => model.modelName).sort();
    };
    await eventually(
      'the TrainedModel controller lists both models',
      async () => JSON.stringify(await listed()) === '["iris-a","iris-b"]',
    );

    const pod = await admittedPod(plane, namespace, deployment, 'mms-predictor-0');
    const agentContainer = pod.spec.containers.find((container) => container.name === 'agent');
    // The drop-in component's image, which KServe's webhook took from inferenceservice-config.
    expect(agentContainer?.image).toBe('modelsync');
    const mounts = Object.fromEntries(
      (agentContainer!.volumeMounts ?? []).map((mount) => [mount.name, mount.mountPath]),
    );
    const configMountPath = pod.metadata.annotations?.['internal.serving.kserve.io/configMountPath'];
    expect(Object.values(mounts)).toEqual(expect.arrayContaining([configMountPath, '/mnt/models']));
    // The kubelet's projection of the ConfigMap volume, re-done whenever the ConfigMap changes.
    const project = async (): Promise<void> => {
      const { data } = await kubectlJson<{ data: Record<string, string> }>(
        plane,
        `configmap/${configMap}`,
        '-n',
        namespace,
      );
      atomicWrite(configDir, data);
    };
    await project();
    const env = await envOf(plane, namespace, pod, agentContainer!);
    expect(Object.keys(env)).toEqual(expect.arrayContaining(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']));
    const port = await freePort();
    const agentUrl = `http://127.0.0.1:${port}`;
    const agent: CliProcess = startCli(agentContainer!.args ?? [], {
      // The one setting not from KServe: tests run side by side, so the agent's 9081 is a free port here.
      env: { ...env, MODELSYNC_HTTP_PORT: String(port), MODELSYNC_LOG_FORMAT: 'json' },
      within: withMounts([
        [configDir, configMountPath!],
        [modelDir, '/mnt/models'],
      ]),
    });
    const serves = (name: string, version: number) => async () =>
      (await infer({ kind: 'mlserver', url: agentUrl }, name).catch(() => undefined)) === version;
    const until = (what: string, check: () => Promise<boolean>) =>
      eventually(what, check, 60_000, () => agent.transcript(30));
    await until(
      'iris-a and iris-b serve through the agent port',
      async () => (await serves('iris-a', 1)()) && (await serves('iris-b', 2)()),
    );

    await plane.kubectl(['delete', 'trainedmodel', 'iris-b', '-n', namespace]);
    await eventually(
      'the TrainedModel controller lists iris-a alone',
      async () => JSON.stringify(await listed()) === '["iris-a"]',
    );
    await project();
    await until('iris-b unloaded from MLServer', async () => !(await serves('iris-b', 2)()));
    expect(await serves('iris-a', 1)()).toBe(true);
    // The server stops serving it at the unload; the files go after, and then the log says so.
    await agent.waitForLog((log) => log['msg'] === 'model removed' && log['model'] === 'iris-b', 30_000);
    expect(agent.logs.filter((log) => log['msg'] === 'model removed').map((log) => log['model'])).toEqual([
      'iris-b',
    ]);
  });

  it('runs the storage initializer KServe injects for a single-model InferenceService with exactly its args and env', async () => {
    const { plane } = controlPlane;
    const namespace = await namespaceWithS3('single');
    await plane.apply(
      {
        apiVersion: 'serving.kserve.io/v1alpha1',
        kind: 'ServingRuntime',
        metadata: { name: 'mlserver-single', namespace },
        spec: {
          protocolVersions: ['v2'],
          supportedModelFormats: [{ name: 'sklearn', version: '1', autoSelect: true }],
          containers: [{ name: 'kserve-container', image: 'docker.io/seldonio/mlserver:1.6.1' }],
        },
      },
      {
        apiVersion: 'serving.kserve.io/v1beta1',
        kind: 'InferenceService',
        metadata: { name: 'iris', namespace },
        spec: {
          predictor: {
            model: {
              modelFormat: { name: 'sklearn' },
              runtime: 'mlserver-single',
              protocolVersion: 'v2',
              storageUri: 's3://models/mlserver/v2',
            },
          },
        },
      },
    );
    const deployment = await availableDeployment(plane, namespace, 'iris');
    const pod = await admittedPod(plane, namespace, deployment, 'iris-predictor-0');
    const initializer = pod.spec.initContainers?.find(
      (container) => container.name === 'storage-initializer',
    );
    // The drop-in's ClusterStorageContainer image, merged over the init container for an s3:// URI.
    expect(initializer?.image).toBe('modelsync');
    expect(initializer?.args).toEqual(['s3://models/mlserver/v2', '/mnt/models']);
    const env = await envOf(plane, namespace, pod, initializer!);
    const dest = join(root, 'single-models');
    await mkdir(dest);
    const run = startCli(initializer!.args!, { env, within: withMounts([[dest, '/mnt/models']]) });
    const exit = await run.exited;
    expect(exit.code).toBe(0);
    expect(await readFileBytes(dest)).toEqual(await readFileBytes(fixtureModel('mlserver', 'v2')));
  });
});
