/**
 * What stands in for the kubelet and the controllers that do not run beside the real API server: a Deployment
 * marked available, a Pod made from its template (as its ReplicaSet would; admission webhooks mutate it), a
 * container's env resolved as the kubelet resolves it, and its volumes bind-mounted at their paths in a mount
 * namespace of the process's own (`unshare -rm`: no privilege needed).
 */
import { waitFor } from '../../src/testing/wait';
import type { ControlPlane } from './control-plane';

export interface Container {
  readonly name: string;
  readonly image: string;
  readonly args?: string[];
  readonly env?: Array<{
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
  }>;
  readonly volumeMounts?: Array<{ name: string; mountPath: string }>;
}

export interface PodJson {
  readonly metadata: { readonly name: string; readonly annotations?: Record<string, string> };
  readonly spec: { readonly containers: Container[]; readonly initContainers?: Container[] };
}

/** `kubectl get <args> -o json`, parsed. */
export const kubectlJson = async <T>(plane: ControlPlane, ...args: string[]): Promise<T> =>
  JSON.parse(await plane.kubectl(['get', ...args, '-o', 'json'])) as T;

/** The predictor Deployment of `isvc` once KServe's controller made it, marked available (no kubelet runs it). */
export const availableDeployment = async (
  plane: ControlPlane,
  namespace: string,
  isvc: string,
): Promise<{ spec: { template: object } }> => {
  const name = `${isvc}-predictor`;
  await waitFor(
    async () => (await plane.kubectl(['get', 'deployments', '-n', namespace, '-o', 'name'])).includes(name),
    60_000,
    `the Deployment ${name}`,
  );
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const condition = { status: 'True', lastUpdateTime: now, lastTransitionTime: now };
  await plane.kubectl([
    'patch',
    'deployment',
    name,
    '-n',
    namespace,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: {
        observedGeneration: 1,
        replicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        updatedReplicas: 1,
        conditions: [
          { type: 'Available', reason: 'MinimumReplicasAvailable', message: 'available', ...condition },
          { type: 'Progressing', reason: 'NewReplicaSetAvailable', message: 'progressed', ...condition },
        ],
      },
    }),
  ]);
  return kubectlJson(plane, `deployment/${name}`, '-n', namespace);
};

/** A Pod made from the Deployment's template, as its ReplicaSet would: what KServe's webhook made of it. */
export const admittedPod = async (
  plane: ControlPlane,
  namespace: string,
  deployment: { spec: { template: object } },
  name: string,
): Promise<PodJson> => {
  const template = deployment.spec.template as { metadata: object; spec: object };
  await plane.apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...template.metadata, name, namespace },
    spec: template.spec,
  });
  return kubectlJson<PodJson>(plane, `pod/${name}`, '-n', namespace);
};

/** A container's env as the kubelet gives it: values, secret keys read from the Secret, the Pod's own fields. */
export const envOf = async (
  plane: ControlPlane,
  namespace: string,
  pod: PodJson,
  container: Container,
): Promise<Record<string, string>> => {
  const env: Record<string, string> = {};
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) env[entry.name] = entry.value;
    else if (entry.valueFrom?.secretKeyRef !== undefined) {
      const { name, key } = entry.valueFrom.secretKeyRef;
      const secret = await kubectlJson<{ data: Record<string, string> }>(
        plane,
        `secret/${name}`,
        '-n',
        namespace,
      );
      env[entry.name] = Buffer.from(secret.data[key]!, 'base64').toString('utf8');
    } else if (entry.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[entry.name] = pod.metadata.name;
    else if (entry.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[entry.name] = namespace;
    else
      throw new Error(`env ${entry.name} of ${container.name}: no way to resolve ${JSON.stringify(entry)}`);
  }
  return env;
};

/** `unshare -rm` with each `[dir, mountPath]` bind-mounted, as the kubelet mounts a pod's volumes, then exec. */
export const withMounts = (mounts: ReadonlyArray<readonly [string, string]>): string[] => [
  'unshare',
  '-rm',
  'sh',
  '-c',
  [
    'mount -t tmpfs none /mnt',
    ...mounts.map((_, i) => `mkdir -p "$${2 * i + 1}" && mount --bind "$${2 * i}" "$${2 * i + 1}"`),
    `shift ${2 * mounts.length}`,
    'exec "$@"',
  ].join(' && '),
  ...mounts.flat(),
];
