/** Reading a rendered model-serving pod: its containers, modelsync's settings as the CLI parses them, its probes. */
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import { flagList } from '../../src/core/flags/app-config';
import { parseArgs } from '../../src/command/parse-args';
import type { Env } from '../../src/core/env';
import type { KubeObject } from './kustomize';

/** The one Deployment of a rendered variant. */
export const deploymentOf = (objects: ReadonlyArray<KubeObject>): IDeployment => {
  const deployments = objects.filter((object) => object.kind === 'Deployment');
  if (deployments.length !== 1) throw new Error(`expected one Deployment, found ${deployments.length}`);
  return deployments[0] as unknown as IDeployment;
};

/** The pod template's spec. */
export const podSpecOf = (deployment: IDeployment): IPodSpec => deployment.spec!.template.spec!;

/** Every container of the pod, init containers first. */
export const allContainers = (pod: IPodSpec): IContainer[] => [
  ...(pod.initContainers ?? []),
  ...pod.containers,
];

/** The container named `name`, wherever it is, and whether it is an init container. */
export const containerNamed = (pod: IPodSpec, name: string): { container: IContainer; init: boolean } => {
  const init = pod.initContainers?.find((container) => container.name === name);
  const regular = pod.containers.find((container) => container.name === name);
  if ((init === undefined) === (regular === undefined)) throw new Error(`expected one container ${name}`);
  return init !== undefined ? { container: init, init: true } : { container: regular!, init: false };
};

/** modelsync's settings as the CLI reads them (argv and MODELSYNC_* env). */
export interface ContainerSettings {
  readonly parsed: ReturnType<typeof parseArgs>;
  readonly unknownEnv: ReadonlyArray<string>;
}

/** Parses the container's arguments and MODELSYNC_* env as the CLI does. */
export const settingsOf = (container: IContainer): ContainerSettings => {
  const rest = container.args ?? [];
  const env: Env = Object.fromEntries((container.env ?? []).map((entry) => [entry.name, entry.value]));
  const knownEnv = new Set(flagList.map(([, spec]) => spec.env as string));
  return {
    parsed: parseArgs(['node', 'modelsync', ...rest], env),
    unknownEnv: Object.keys(env).filter((name) => name.startsWith('MODELSYNC_') && !knownEnv.has(name)),
  };
};

/** The container port a probe's `port` (a number or a port name) means, in `container`. */
export const probePort = (container: IContainer, port: number | string | undefined): number | undefined =>
  typeof port === 'number'
    ? port
    : container.ports?.find((candidate) => candidate.name === port)?.containerPort;
