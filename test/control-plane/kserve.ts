/**
 * KServe's own control plane on the real API server (./control-plane.ts): its CRDs, its `inferenceservice-config`
 * and default ClusterStorageContainer with modelsync's drop-in component applied by the real kustomize
 * (deploy/kserve-dropin/component), its webhooks pointed at its manager on 127.0.0.1, and the manager itself
 * (v0.19.0, built by scripts/install-control-plane.sh, its config/ beside it). RawDeployment (`Standard`): no
 * Knative or Istio. Nothing runs Deployments here (no controller-manager, no kubelet): a test marks a Deployment
 * available and creates its Pod itself, which the real webhook then mutates on admission.
 */
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  copyFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { waitFor } from '../../src/testing/wait';
import { repoRoot } from '../real-servers/paths';
import { freePorts } from '../real-servers/servers';
import { renderKustomization, type KubeObject } from '../deploy/kustomize';
import type { ControlPlane } from './control-plane';
import { controlPlaneBinaries, startPiece, stopPiece, waitReady } from './pieces';

const tlsDir = join(repoRoot, 'test', 'fixtures', 'tls');
export const kserveNamespace = 'kserve';

/** Every object of the YAML files `files`. */
const objectsOf = (...files: string[]): KubeObject[] =>
  files.flatMap((file) =>
    parseAllDocuments(readFileSync(file, 'utf8'))
      .map((document) => document.toJS() as KubeObject | null)
      .filter((object): object is KubeObject => object !== null),
  );

const yamlIn = (dir: string): string[] =>
  readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
    .map((name) => join(dir, name));

/** KServe's config and storage container, with modelsync's drop-in component, as kustomize renders them. */
const dropInObjects = (config: string): KubeObject[] => {
  const dir = mkdtempSync(join(tmpdir(), 'modelsync-kserve-kustomize-'));
  try {
    const from = (path: string): string => relative(dir, path);
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        namespace: kserveNamespace,
        resources: [from(join(config, 'configmap')), from(join(config, 'storagecontainers'))],
        components: [from(join(repoRoot, 'deploy', 'kserve-dropin', 'component'))],
      }),
    );
    return renderKustomization(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** KServe's manager, running. */
export interface Kserve {
  stop(): Promise<void>;
}

/** Installs KServe on `plane` and starts its manager; resolves once its webhooks answer (~10 s here). */
export const installKserve = async (plane: ControlPlane): Promise<Kserve> => {
  const { kserveManager, kserveConfig: config } = controlPlaneBinaries();
  const crds = join(config, 'crd', 'full');
  await plane.apply(
    ...objectsOf(
      ...yamlIn(crds).filter((file) => /serving\.kserve\.io_/.test(file)),
      ...yamlIn(join(crds, 'clusterstoragecontainer')),
      ...yamlIn(join(crds, 'localmodel')),
    ),
  );
  // Right after the apply a CRD may have no conditions yet, which `kubectl wait` takes for an error: ask again.
  await waitFor(
    () =>
      plane.kubectl(['wait', '--for=condition=established', 'crd', '--all', '--timeout=10s']).then(
        () => true,
        () => false,
      ),
    60_000,
    "KServe's CRDs established",
  );
  await plane.kubectl(['create', 'namespace', kserveNamespace]);
  const objects = dropInObjects(config).map((object) => {
    if (object.kind !== 'ConfigMap' || object.metadata.name !== 'inferenceservice-config') return object;
    // RawDeployment: KServe's controller makes Deployments and Services, no Knative or Istio needed.
    const data = {
      ...(object['data'] as Record<string, string>),
      deploy: '{"defaultDeploymentMode": "Standard"}',
    };
    return { ...object, data };
  });
  await plane.apply(...objects);

  const [webhookPort, healthPort] = (await freePorts(2)) as [number, number];
  const caBundle = readFileSync(join(tlsDir, 'ca.pem')).toString('base64');
  const webhooks = objectsOf(join(config, 'webhook', 'manifests.yaml')).map((object): KubeObject => {
    const hooks = (object['webhooks'] as Array<Record<string, unknown>>).map((hook) => {
      const { service } = hook['clientConfig'] as { service: { path: string } };
      return { ...hook, clientConfig: { url: `https://127.0.0.1:${webhookPort}${service.path}`, caBundle } };
    });
    return { ...object, webhooks: hooks };
  });
  await plane.apply(...webhooks);

  // The manager serves its webhooks with the certificate it finds here (SAN 127.0.0.1: the fixture's).
  const tmp = join(plane.dir, 'kserve-tmp');
  const certs = join(tmp, 'k8s-webhook-server', 'serving-certs');
  mkdirSync(certs, { recursive: true });
  copyFileSync(join(tlsDir, 'server.pem'), join(certs, 'tls.crt'));
  copyFileSync(join(tlsDir, 'server-key.pem'), join(certs, 'tls.key'));
  const manager = startPiece(
    plane.dir,
    'kserve-manager',
    kserveManager,
    [
      `--kubeconfig=${plane.adminKubeconfig}`,
      '--metrics-addr=0',
      `--health-probe-addr=127.0.0.1:${healthPort}`,
      `--webhook-port=${webhookPort}`,
    ],
    { POD_NAMESPACE: kserveNamespace, TMPDIR: tmp },
  );
  try {
    await waitReady(manager, `http://127.0.0.1:${healthPort}/readyz`, {});
  } catch (error) {
    await stopPiece(manager, 'SIGKILL');
    throw error;
  }
  return { stop: () => stopPiece(manager) };
};
