/** The ConfigMap as a config source, purely: the request's path and selector, a version's key read as text, failures in words. */
import { isJsonObject } from './json/json-object';
import * as E from 'fp-ts/Either';
import { readFailed, tooLarge, invalidEncoding, type ByteLimit, type ConfigError } from './errors';
import { jsonText } from './json/json-bytes';
import { tlsFailureKind } from './tls-reason';

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

/** A JSON value's kind in words, for a reason that says what came instead of what was expected. */
const kindOf = (value: unknown): string => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
};

// Standard base64 with padding, as the API server encodes binaryData; atob alone would also take spaces.
const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The field `field` (`data`, `binaryData`) of the object as a map of strings, or why it is not one. Absent and
 * `null` are empty (Go's decoder, the API server's, reads `null` as an absent map); any other non-object, or
 * a key whose value is not a string, is named: the object did not come from an API server as it should.
 */
const stringMap = (
  configMap: Readonly<Record<string, unknown>>,
  field: string,
): E.Either<string, Readonly<Record<string, string>>> => {
  const value = configMap[field];
  if (value === undefined || value === null) return E.right({});
  if (!isJsonObject(value)) return E.left(`its ${field} is ${kindOf(value)}, not an object of strings`);
  const bad = Object.entries(value).find(([, entry]) => typeof entry !== 'string');
  if (bad !== undefined) return E.left(`its ${field} key ${bad[0]} holds ${kindOf(bad[1])}, not a string`);
  return E.right(value as Readonly<Record<string, string>>);
};

/** The key's value as text (`data`) or bytes (`binaryData`), or why the ConfigMap holds no usable value. */
const keyValue = (
  label: string,
  key: string,
  configMap: unknown,
): E.Either<ConfigError, string | Uint8Array> => {
  const invalid = (reason: string): E.Either<ConfigError, never> =>
    E.left(readFailed(label, 'EINVAL', reason));
  if (!isJsonObject(configMap)) return invalid(`the API server sent ${kindOf(configMap)} as the ConfigMap`);
  const data = stringMap(configMap, 'data');
  const binaryData = stringMap(configMap, 'binaryData');
  if (E.isLeft(data)) return invalid(data.left);
  if (E.isLeft(binaryData)) return invalid(binaryData.left);
  const text = Object.hasOwn(data.right, key) ? data.right[key] : undefined;
  const binary = Object.hasOwn(binaryData.right, key) ? binaryData.right[key] : undefined;
  if (text !== undefined && binary !== undefined)
    return invalid(`the key ${key} is in both data and binaryData (the API server allows it in one)`);
  if (text !== undefined) return E.right(text);
  if (binary === undefined) return E.left(readFailed(label, 'ENOENT', `the ConfigMap has no key ${key}`));
  if (!base64.test(binary)) return invalid(`its binaryData key ${key} is not base64`);
  return E.right(Uint8Array.from(atob(binary), (c) => c.charCodeAt(0)));
};

/**
 * One version of the ConfigMap (`undefined`: it does not exist) read the way models.json is read from a file:
 * a missing ConfigMap or key is a failed read (the last good config stays), a value over `maxBytes` is refused,
 * a `binaryData` value must be UTF-8 text, a leading byte-order mark is dropped. The object is checked, not
 * trusted: a value of the wrong type (a `data` that is no map of strings, a key in both maps, binaryData that is
 * no base64) is a failed read naming it.
 */
export const configMapText = (
  ref: ConfigMapRef,
  configMap: unknown,
  limit: ByteLimit,
): E.Either<ConfigError, string> => {
  const label = configMapLabel(ref);
  if (configMap === undefined) return E.left(readFailed(label, 'ENOENT', 'the ConfigMap does not exist'));
  const value = keyValue(label, ref.key, configMap);
  if (E.isLeft(value)) return value;
  const text = typeof value.right === 'string' ? value.right : undefined;
  const bytes = text !== undefined ? new TextEncoder().encode(text) : (value.right as Uint8Array);
  if (bytes.length > limit.maxBytes) return E.left(tooLarge(label, bytes.length, limit));
  // A byte-order mark is dropped as from the mounted file (jsonText): `kubectl create configmap --from-file` keeps
  // a Windows editor's in `data`, and kubelet writes it to the file the dir source reads.
  if (text !== undefined) return E.right(text.startsWith('\ufeff') ? text.slice(1) : text);
  return E.mapLeft((found: string) => invalidEncoding(label, found))(jsonText(bytes));
};

/** What modelsync can say about a failed API request without quoting it (tokens travel in its headers). */
export interface KubeFailure {
  /** The HTTP status, when the server answered. */
  readonly status?: number;
  /** The server took the request as `system:anonymous` (its Status says so), or no credential was sent. */
  readonly anonymous?: boolean;
  /** The user a 403's Status names (`User "system:serviceaccount:ns:sa" cannot list …`): whom the Role refused. */
  readonly user?: string;
  /** A 401 to a credential an exec plugin gave: forgotten, the next request runs the plugin for a new one. */
  readonly renewable?: boolean;
  /** The refusal's Status message (one line, cut short): what the server says was wrong with the request. */
  readonly serverMessage?: string;
  /** A network error's code (`ECONNREFUSED`), when there was no answer. */
  readonly code?: string;
  readonly message?: string;
}

/** The user a real API server names for a request without credentials (anonymous auth on, as by default). */
const anonymousUser = 'system:anonymous';

/**
 * Whether an API server's refusal (a Status: `message`, `details`) names the anonymous user: it saw no
 * credentials. A real one answers `configmaps is forbidden: User "system:anonymous" cannot list resource …`.
 */
export const namesAnonymousUser = (status: Readonly<Record<string, unknown>> | undefined): boolean =>
  [status?.['message'], JSON.stringify(status?.['details'] ?? null)].some(
    (text) => typeof text === 'string' && text.includes(anonymousUser),
  );

/**
 * The user a refusal's Status names, as a real API server words it (`… is forbidden: User "<name>" cannot list …`):
 * printable, without spaces or quotes, at most 128 characters; undefined otherwise.
 */
export const refusedUser = (status: Readonly<Record<string, unknown>> | undefined): string | undefined => {
  const message = status?.['message'];
  return typeof message === 'string' ? /User "([!#-~]{1,128})" cannot/.exec(message)?.[1] : undefined;
};

const statusWords: Readonly<Record<number, string>> = {
  401: 'the API server refused the credentials (401 Unauthorized): check the service account token or the kubeconfig user',
  403: 'the API server forbade it (403 Forbidden): the Role must allow get, list and watch on this ConfigMap (resourceNames)',
  404: 'the API server has no such namespace or resource (404 Not Found)',
  429: 'the API server is throttling requests (429 Too Many Requests)',
};

/** A 401 or 403 for a request that reached the server without credentials: the Role is not to blame. */
const noCredentials = (status: 401 | 403): string =>
  `no credentials were sent (the API server answered ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'} ` +
  "to an anonymous request): check the kubeconfig user's token, tokenFile or client certificate, or in a pod " +
  'the service account token file; the Role is not what refused it';

/** `server`'s host and port, to name the API server a TLS failure is with (never its user info or path). */
const apiServerAt = (server: string | undefined): string => {
  const host = server === undefined ? undefined : URL.parse(server)?.host;
  return host ? ` at ${host}` : '';
};

/** A network error the API server's TLS failed with, in words: whose certificate, and where its CA is set. */
const describeTlsFailure = (
  failure: KubeFailure,
  code: string,
  server: string | undefined,
): string | undefined => {
  const kind = tlsFailureKind(code);
  if (kind === undefined) return undefined;
  const detail = failure.message === undefined ? code : `${code}: ${failure.message}`;
  return kind === 'certificate'
    ? `the API server${apiServerAt(server)} presented a certificate that was refused (${detail}): check the ` +
        "certificate-authority or certificate-authority-data of the kubeconfig's cluster, or in a pod the service " +
        "account's ca.crt"
    : `the TLS handshake with the API server${apiServerAt(server)} failed (${detail})`;
};

/**
 * A failed list or watch in words: the status and what to check, or the network error (a TLS one naming `server`,
 * the cluster's URL); never a header.
 */
export const describeKubeFailure = (failure: KubeFailure, server?: string): string => {
  if (failure.status !== undefined && failure.status >= 300 && failure.status < 400)
    return `the API server answered a redirect (HTTP ${failure.status}), not followed: the token goes to no other address`;
  if ((failure.status === 401 || failure.status === 403) && failure.anonymous === true)
    return noCredentials(failure.status);
  if (failure.status === 403 && failure.user !== undefined)
    return (
      `the API server forbade it to ${failure.user} (403 Forbidden): the Role bound to that user must allow get, ` +
      'list and watch on this ConfigMap (resourceNames)'
    );
  if (failure.status !== undefined)
    return (
      statusWords[failure.status] ??
      `the API server answered HTTP ${failure.status}${failure.serverMessage === undefined ? '' : `: ${failure.serverMessage}`}`
    );
  if (failure.code !== undefined)
    return (
      describeTlsFailure(failure, failure.code, server) ?? `cannot reach the API server (${failure.code})`
    );
  return `the request failed: ${(failure.message ?? 'no reason given').slice(0, 200)}`;
};
