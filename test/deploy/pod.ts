/** Reading a rendered model-serving pod: its containers, modelsync's settings as the CLI parses them, its probes. */
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import { flagList } from '../../src/core/app-config';
import { parseArgs, type Env } from '../../src/parse-args';
import type { KubeObject } from './kustomize';

/**
 * MERGE STEP (issue #9): flags the manifests use that the "surface" and "behaviour" helpers add to the flag
 * table. Until they land, their values are read here and checked by the tests; empty this list when they do
 * (a test fails once a flag in it is in the flag table).
 */
export const awaitedFlags: ReadonlyArray<string> = ['--shutdown-timeout'];

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

/** modelsync's settings as the CLI reads them (argv and MODELSYNC_* env), and the awaited flags' values apart. */
export interface ContainerSettings {
  readonly parsed: ReturnType<typeof parseArgs>;
  readonly awaited: ReadonlyMap<string, string>;
  readonly unknownEnv: ReadonlyArray<string>;
}

/** Splits `--flag=value` and `--flag value` arguments apart from the awaited flags and parses the rest. */
export const settingsOf = (container: IContainer): ContainerSettings => {
  const awaited = new Map<string, string>();
  const rest: string[] = [];
  const args = container.args ?? [];
  for (let index = 0; index < args.length; index++) {
    const [flag, inline] = args[index]!.split(/=(.*)/s) as [string, string | undefined];
    if (!awaitedFlags.includes(flag)) rest.push(args[index]!);
    else awaited.set(flag, inline ?? args[++index] ?? '');
  }
  const env: Env = Object.fromEntries((container.env ?? []).map((entry) => [entry.name, entry.value]));
  const knownEnv = new Set(flagList.map(([, spec]) => spec.env as string));
  return {
    parsed: parseArgs(['node', 'modelsync', ...rest], env),
    awaited,
    unknownEnv: Object.keys(env).filter((name) => name.startsWith('MODELSYNC_') && !knownEnv.has(name)),
  };
};

/** The container port a probe's `port` (a number or a port name) means, in `container`. */
export const probePort = (container: IContainer, port: number | string | undefined): number | undefined =>
  typeof port === 'number'
    ? port
    : container.ports?.find((candidate) => candidate.name === port)?.containerPort;

/** Seconds of a duration written `20s`, `5m` or `1500ms` (the style of --shutdown-timeout). */
export const durationSeconds = (text: string): number => {
  const match = /^(\d+)(ms|s|m)$/.exec(text);
  if (match === null) throw new Error(`not a duration: ${text}`);
  return Number(match[1]) / { ms: 1000, s: 1, m: 1 / 60 }[match[2] as 'ms' | 's' | 'm'];
};
