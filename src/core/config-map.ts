/** The ConfigMap as a config source, purely: the request's path and selector, a version's key read as text, failures in words. */
import * as E from 'fp-ts/Either';
import { readFailed, tooLarge, invalidEncoding, type ByteLimit, type ConfigError } from './errors';
import { jsonText } from './json/json-bytes';

/** Which key of which ConfigMap holds the model list. */
export interface ConfigMapRef {
  readonly namespace: string;
  readonly name: string;
  readonly key: string;
}

/** The fields of a ConfigMap modelsync reads (the API object has more). */
export interface ConfigMapObject {
  readonly metadata?: { readonly name?: string; readonly resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
}

/** The collection path the list and the watch go to. */
export const configMapsPath = (namespace: string): string =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;

/**
 * The field selector on list and watch: only this ConfigMap. A Role restricted by `resourceNames` refuses a list
 * or watch of the whole collection; with `metadata.name=<name>` the API server authorizes it as a request for
 * the named object.
 */
export const configMapSelector = (name: string): string => `metadata.name=${name}`;

/** How the ConfigMap's key is named in log lines and config errors, where a file path would be. */
export const configMapLabel = (ref: ConfigMapRef): string =>
  `configmap ${ref.namespace}/${ref.name} key ${ref.key}`;

/**
 * The query the watch adds to the client's own: bookmarks (the saved version then moves even when this object
 * does not, so a reconnect is not told "too old") and `timeoutSeconds` (the server ends a quiet watch, which the
 * client re-opens from the saved version).
 */
export const watchQuery = (timeoutSeconds: number): Readonly<Record<string, string | number | boolean>> => ({
  allowWatchBookmarks: true,
  timeoutSeconds,
});

/**
 * How long without list or watch progress before the watch counts as stalled and is re-established: the server
 * should have ended it (or sent a bookmark) after `timeoutSeconds`; a grace of the same length, at most 30 s,
 * covers a slow server. Past this, the connection is presumed half-open (the client has no read timeout).
 */
export const stallMsFor = (timeoutSeconds: number): number =>
  timeoutSeconds * 1000 + Math.min(30_000, timeoutSeconds * 1000);

const base64Bytes = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/**
 * One version of the ConfigMap (`undefined`: it does not exist) read the way models.json is read from a file:
 * a missing ConfigMap or key is a failed read (the last good config stays), a value over `maxBytes` is refused,
 * a `binaryData` value must be UTF-8 text.
 */
export const configMapText = (
  ref: ConfigMapRef,
  configMap: ConfigMapObject | undefined,
  limit: ByteLimit,
): E.Either<ConfigError, string> => {
  const label = configMapLabel(ref);
  if (configMap === undefined) return E.left(readFailed(label, 'ENOENT', 'the ConfigMap does not exist'));
  const text = configMap.data?.[ref.key];
  const binary = configMap.binaryData?.[ref.key];
  if (text === undefined && binary === undefined)
    return E.left(readFailed(label, 'ENOENT', `the ConfigMap has no key ${ref.key}`));
  const bytes = text !== undefined ? new TextEncoder().encode(text) : base64Bytes(binary ?? '');
  if (bytes.length > limit.maxBytes) return E.left(tooLarge(label, bytes.length, limit));
  if (text !== undefined) return E.right(text);
  return E.mapLeft((found: string) => invalidEncoding(label, found))(jsonText(bytes));
};

/** What modelsync can say about a failed API request without quoting it (tokens travel in its headers). */
export interface KubeFailure {
  /** The HTTP status, when the server answered. */
  readonly status?: number;
  /** A network error's code (`ECONNREFUSED`), when there was no answer. */
  readonly code?: string;
  readonly message?: string;
}

const statusWords: Readonly<Record<number, string>> = {
  401: 'the API server refused the credentials (401 Unauthorized): check the service account token or the kubeconfig user',
  403: 'the API server forbade it (403 Forbidden): the Role must allow get, list and watch on this ConfigMap (resourceNames)',
  404: 'the API server has no such namespace or resource (404 Not Found)',
  429: 'the API server is throttling requests (429 Too Many Requests)',
};

/** A failed list or watch in words: the status and what to check, or the network error; never a header. */
export const describeKubeFailure = (failure: KubeFailure): string => {
  if (failure.status !== undefined)
    return statusWords[failure.status] ?? `the API server answered HTTP ${failure.status}`;
  if (failure.code !== undefined) return `cannot reach the API server (${failure.code})`;
  return `the request failed: ${(failure.message ?? 'no reason given').slice(0, 200)}`;
};
