/** The Kubernetes client, loaded at its first use, and the cluster settings it is given: in-cluster, or a kubeconfig. */
import type { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import type { Env } from '../core/env';
import { lazyModule } from '../core/lazy-module';
import { tokenFileAuthenticator, tokenFileProvider, trimUserTokens } from './kube-token';

/** The `@kubernetes/client-node` module (ESM-only: Node 24 `require`s it). */
export type KubeClientModule = typeof import('@kubernetes/client-node');

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first kube-api read (lazy-module.ts)
const clientModule = lazyModule(() => require('@kubernetes/client-node') as KubeClientModule);

/** The client module, loaded once (only `--source kube-api` needs it); a Promise, as the callers await it. */
export const kubeClient = (): Promise<KubeClientModule> => Promise.resolve().then(clientModule);

/** Where a pod's service account is mounted: `token`, `ca.crt`, `namespace`. */
export const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

const readText = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
};

/** True when the cluster settings come from a kubeconfig (`KUBECONFIG` set, or not in a pod). */
const usesKubeconfig = (env: Env): boolean =>
  (env['KUBECONFIG'] ?? '') !== '' || (env['KUBERNETES_SERVICE_HOST'] ?? '') === '';

/**
 * A fresh KubeConfig: with `KUBECONFIG` (or outside a pod), the kubeconfig files, as kubectl reads them (a
 * `token-file` is read now); in a pod, the API server from `KUBERNETES_SERVICE_HOST`/`_PORT`, the mount's CA and
 * its projected token (read, trimmed, at every request: kube-token.ts). Built anew after each failure, so a rotated
 * token or an edited kubeconfig is picked up by the next attempt. Throws when the settings cannot be read.
 */
export const loadKubeConfig = (kube: KubeClientModule, env: Env, saDir = serviceAccountDir): KubeConfig => {
  const config = new kube.KubeConfig();
  if (usesKubeconfig(env)) {
    const files = (env['KUBECONFIG'] ?? '').split(':').filter((file) => file !== '');
    if (files.length === 0) config.loadFromDefault();
    else {
      config.loadFromFile(files[0]!);
      for (const file of files.slice(1)) {
        const more = new kube.KubeConfig();
        more.loadFromFile(file);
        config.mergeConfig(more);
      }
    }
    trimUserTokens(config);
    return config;
  }
  const host = env['KUBERNETES_SERVICE_HOST'] ?? '';
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  config.loadFromClusterAndUser(
    {
      name: 'in-cluster',
      server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      caFile: join(saDir, 'ca.crt'),
      skipTLSVerify: false,
    },
    {
      name: 'service-account',
      authProvider: { name: tokenFileProvider, config: { path: join(saDir, 'token') } },
    },
  );
  config.addAuthenticator(tokenFileAuthenticator);
  return config;
};

/**
 * The namespace to watch when `--namespace` is not given: the pod's (the service account mount's `namespace`
 * file), else the kubeconfig context's, else `default` (as kubectl).
 */
export const defaultNamespace = (config: KubeConfig, saDir = serviceAccountDir): string =>
  readText(join(saDir, 'namespace')) ||
  config.getContextObject(config.getCurrentContext())?.namespace ||
  'default';
