/** What of deploy/ is rendered and checked: each overlay, and the components on top of each server's overlay. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';

/** deploy/ of this repository. */
export const deployDir = join(__dirname, '..', '..', 'deploy');

/** The model servers with an overlay of their own. */
export const serverOverlays = ['triton', 'mlserver', 'kserve', 'torchserve'] as const;

/** A way to deploy: an overlay dir of deploy/, or overlays and components composed as a user would. */
export type Variant =
  | { readonly name: string; readonly overlay: string }
  | {
      readonly name: string;
      readonly resources: ReadonlyArray<string>;
      readonly components: ReadonlyArray<string>;
      readonly namespace: string;
    };

/** Every variant the tests render: the overlays as they are, and each optional component on each server. */
export const variants: ReadonlyArray<Variant> = [
  ...['triton', 'mlserver', 'kserve', 'torchserve', 'triton-native-sidecar', 'triton-kube-api'].map(
    (overlay) => ({
      name: overlay,
      overlay,
    }),
  ),
  ...serverOverlays.map((server) => ({
    name: `${server} + native-sidecar + service-monitor`,
    resources: [`overlays/${server}`],
    components: ['components/native-sidecar', 'components/service-monitor'],
    namespace: 'model-serving',
  })),
  ...serverOverlays.map((server) => ({
    name: `${server} + model-claim + native-sidecar`,
    resources: [`overlays/${server}`],
    components: ['components/model-claim', 'components/native-sidecar'],
    namespace: 'model-serving',
  })),
  ...serverOverlays.map((server) => ({
    name: `${server} + node-cache + native-sidecar`,
    resources: [`overlays/${server}`],
    components: ['components/node-cache', 'components/native-sidecar'],
    namespace: 'model-serving',
  })),
  ...serverOverlays.map((server) => ({
    name: `${server} + kube-events`,
    resources: [`overlays/${server}`],
    components: ['components/kube-events'],
    namespace: 'model-serving',
  })),
];

/** Whether `variant` gives modelsync a token to write its Pod's Events with (the component, or the kube-api overlay). */
export const writesEvents = (variant: Variant): boolean =>
  'overlay' in variant
    ? variant.overlay === 'triton-kube-api'
    : variant.components.includes('components/kube-events');

/** Kustomizations of deploy/ that hold no model-serving pod, so not in `variants`: each has a test of its own. */
export const podlessKustomizations: ReadonlyArray<{ readonly name: string; readonly dir: string }> = [
  { name: 'kserve-dropin/example', dir: join(deployDir, 'kserve-dropin', 'example') },
];

/**
 * Runs `use` on a dir holding the variant's kustomization: its overlay, or a temp dir with a kustomization.yaml
 * that reaches deploy/ by relative paths (kustomize refuses absolute ones), removed afterwards.
 */
export const withVariantDir = <T>(variant: Variant, use: (dir: string) => T): T => {
  if ('overlay' in variant) return use(join(deployDir, 'overlays', variant.overlay));
  const dir = mkdtempSync(join(tmpdir(), 'modelsync-kustomize-'));
  try {
    const from = (path: string): string => relative(dir, join(deployDir, path));
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: variant.namespace,
      resources: variant.resources.map(from),
      components: variant.components.map(from),
    };
    writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
    return use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
