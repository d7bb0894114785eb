/** kubeCall in unit tests: the client's classes it uses, faked (the real client is ESM: jest cannot load it). */
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeClientModule } from '../../src/config-source/kube-client';
import { kubeCall } from '../../src/config-source/kube-request';

/** The client's classes kubeCall uses, doing nothing but carry the URL. */
export const fakeClient = {
  HttpMethod: { GET: 'GET' },
  RequestContext: class {
    getHeaders = (): Record<string, string> => ({});
    getDispatcher = (): undefined => undefined;
  },
} as unknown as KubeClientModule;

/** A GET of `path` through `config` with no deadline of the caller's; what it failed with, or undefined. */
export const failureOfCall = (config: KubeConfig, path: string): Promise<unknown> =>
  kubeCall(fakeClient, config, path, {}, new AbortController().signal).then(
    () => undefined,
    (error: unknown) => error,
  );
