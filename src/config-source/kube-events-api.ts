/**
 * kubeEventsTarget: the agent's own Pod, whose Kubernetes Events its recorder writes with the config watch's
 * credentials and TLS (kube-client.ts): create an Event, count an identical one up (a merge patch).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Env } from '../core/env';
import type { KubeEventsWriter, PodRef } from '../core/kube-event';
import {
  defaultNamespace,
  kubeClient,
  loadKubeConfig,
  serviceAccountTokenPod,
  type KubeClientModule,
} from './kube-client';
import { describeKubeFailure } from '../core/config-map';
import { kubeCall, kubeFailureOf, KubeStatusError, type KubeWrite } from './kube-request';

/** A write waits this long at most: a recorder never holds anything up on a slow API server. */
const writeTimeoutMs = 10_000;

/**
 * Where the agent would write its Events (with its credentials; each write throws as `kubeCall` does), or why it
 * cannot: no Pod known, or no settings to reach the server.
 */
export type KubeEventsTarget =
  | { readonly _tag: 'Ready'; readonly api: KubeEventsWriter }
  | {
      readonly _tag: 'Unavailable';
      readonly why: string;
      /** Outside a pod, with no Pod named: nothing to write Events about, as expected (a laptop, CI). */
      readonly outsidePod?: boolean;
    };

const inPod = (env: Env): boolean => (env['KUBERNETES_SERVICE_HOST'] ?? '') !== '';

/**
 * The agent's Pod: the downward API's env (`POD_NAME`, `POD_NAMESPACE`, `POD_UID`), else (in a pod) the one its
 * service account token was issued for (a bound token names it, uid included: KServe's webhook sets no env), else
 * its hostname (cut to 63 characters by the kubelet) and the service account's namespace. `kubectl describe pod`
 * selects events by the uid too: without one they are shown by `kubectl get events` only.
 */
const podOf = async (env: Env, config: KubeConfig, saDir?: string): Promise<PodRef | undefined> => {
  const token =
    (env['POD_NAME'] ?? '') === '' && inPod(env) ? await serviceAccountTokenPod(saDir) : undefined;
  const name = env['POD_NAME'] || token?.name || (inPod(env) ? env['HOSTNAME'] : undefined);
  if (name === undefined || name === '') return undefined;
  const namespace = env['POD_NAMESPACE'] || token?.namespace || (await defaultNamespace(config, saDir));
  const uid = env['POD_UID'] || token?.uid || '';
  return { name, namespace, ...(uid === '' ? {} : { uid }) };
};

/** One write; it throws as `kubeCall` does, or with the deadline's reason (`eventWriteFailure` says it). */
const write = async (
  kube: KubeClientModule,
  config: KubeConfig,
  path: string,
  request: KubeWrite,
): Promise<void> => {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('no answer within 10 s')), writeTimeoutMs);
  try {
    const response = await kubeCall(kube, config, path, {}, controller.signal, 'application/json', request);
    await response.body?.cancel().catch(() => undefined);
  } finally {
    clearTimeout(timer);
  }
};

/** What to say of a failed write (the status and what to check, or the network error), and whether it was refused. */
export const eventWriteFailure = (error: unknown): { readonly reason: string; readonly refused: boolean } => {
  const failure = kubeFailureOf(error);
  // A 401 to an exec plugin's credential is not for good: the next write runs the plugin (it had expired).
  const refused = (failure.status === 401 && failure.renewable !== true) || failure.status === 403;
  if (failure.status !== 403 || failure.anonymous === true)
    return { reason: describeKubeFailure(failure), refused };
  return {
    reason:
      `the API server forbade it${failure.user !== undefined ? ` to ${failure.user}` : ''} (403 Forbidden): the ` +
      "Role bound to the agent's service account must allow create and patch on events in the Pod's namespace " +
      '(deploy/components/kube-events), or run with --kube-events off',
    refused,
  };
};

/**
 * The Events API for the agent's Pod with the cluster settings of `env` (`KUBECONFIG`, or in a pod the service
 * account mount at `saDir`), or why there is none.
 */
export const kubeEventsTarget = async (env: Env, saDir?: string): Promise<KubeEventsTarget> => {
  if (!inPod(env) && (env['POD_NAME'] ?? '') === '')
    return {
      _tag: 'Unavailable',
      why: 'not in a pod (no KUBERNETES_SERVICE_HOST) and no POD_NAME set',
      outsidePod: true,
    };
  let kube: KubeClientModule;
  let config: KubeConfig;
  try {
    kube = await kubeClient();
    config = await loadKubeConfig(kube, env, saDir);
  } catch (error) {
    return { _tag: 'Unavailable', why: `no cluster settings: ${(error as Error).message}` };
  }
  const pod = await podOf(env, config, saDir);
  if (pod === undefined)
    return { _tag: 'Unavailable', why: 'the Pod name is unknown (set POD_NAME from the downward API)' };
  const events = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/events`;
  // Built anew after a failed write, as the watch's after each failure (kube-client.ts): a CA, a client certificate
  // or a kubeconfig changed since is used. Kept otherwise (an exec plugin's credential is cached for the process).
  let settings: Promise<KubeConfig> | undefined = Promise.resolve(config);
  const writing = async (path: string, request: KubeWrite): Promise<void> => {
    try {
      await write(kube, await (settings ??= loadKubeConfig(kube, env, saDir)), path, request);
    } catch (error) {
      settings = undefined;
      throw error;
    }
  };
  return {
    _tag: 'Ready',
    api: {
      pod,
      create: (event) => writing(events, { method: 'POST', body: event, contentType: 'application/json' }),
      repeat: (name, patch) =>
        writing(`${events}/${encodeURIComponent(name)}`, {
          method: 'PATCH',
          body: patch,
          contentType: 'application/merge-patch+json',
        }).then(
          () => true,
          (error: unknown) => {
            if (error instanceof KubeStatusError && error.failure.status === 404) return false;
            throw error;
          },
        ),
    },
  };
};
