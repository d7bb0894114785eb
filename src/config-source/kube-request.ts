/** kubeCall: one request to the API server with the kubeconfig's TLS and credentials, bounded, never redirected. */
import { STATUS_CODES } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Response } from 'undici';
import { namesAnonymousUser, refusedUser, type KubeFailure } from '../core/config-map';
import { errorCode, errorMessage } from '../core/errors';
import { tlsFailureKind, tlsHandshakeReason } from '../core/tls-reason';
import { lazyModule } from '../core/lazy-module';
import { minSecretLength, redactedMark } from '../core/redact';
import { jsonObject } from '../core/json/json-object';
import { readCapped } from '../net';
import type { KubeClientModule } from './kube-client';
import { execCredentialRefused, usesExecPlugin } from './kube-exec';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- undici's whole index (fetch), at the first call */
const undici = lazyModule(() => require('undici') as typeof import('undici'));

/**
 * The most read of one answer holding the ConfigMap (a list, or a watch line): its data is at most 1 MiB, its
 * escaped JSON a few times that; more is a server that never ends its answer, or no API server.
 */
export const maxKubeAnswerBytes = 8 * 2 ** 20;

/** The most read of a refusal's body (a Status): enough for its message, never the whole of a hostile one. */
const maxStatusBytes = 64 * 2 ** 10;

/**
 * A failure that a watch resumed from the same resourceVersion would only meet again (an event no API server
 * sends, a line over the cap, an ERROR event, `410 Gone`): its ListWatch is dropped and a new one lists first.
 */
export class KubeRelistNeeded extends Error {}

/**
 * A resourceVersion as an API server writes it (opaque, but never long or odd), or undefined: one that is not is
 * shown at /status and sent back as a query parameter, so it is not believed.
 */
export const kubeVersionOf = (value: unknown): string | undefined =>
  typeof value === 'string' && /^[\w.-]{1,64}$/.test(value) ? value : undefined;

/** The answer holding the ConfigMap is over `maxKubeAnswerBytes`: that version cannot be read. */
export class KubeAnswerTooLarge extends KubeRelistNeeded {}

/** The API server answered another status than 2xx: `failure` is what may be said of it (`kubeFailureOf`). */
export class KubeStatusError extends Error {
  constructor(
    message: string,
    readonly failure: KubeFailure & { readonly status: number },
  ) {
    super(message);
  }
}

/** The refusal's Status, read bounded (a longer one is cut, so no JSON), or undefined when it is none. */
const statusOf = async (response: Response): Promise<Record<string, unknown> | undefined> => {
  if (response.body === null) return undefined;
  try {
    const bytes = await readCapped(response.body, maxStatusBytes);
    return jsonObject(JSON.parse(bytes.toString('utf8')) as unknown);
  } catch {
    return undefined;
  }
};

/** The most of a refusal's Status message said (a 422's names the field; a hostile one is never said whole). */
const maxServerMessageChars = 200;

/**
 * `text` without the credential `headers` carried: an API server, or a webhook in front of it, may quote it back in
 * a refusal, which is logged and posted as an Event. A bearer token is re-read at every request (rotated), so it
 * is not registered with the redaction guard; it is taken out of what the server says here.
 */
const withoutCredential = (headers: Record<string, string>): ((text: string) => string) => {
  const header = Object.entries(headers).find(([name]) => name.toLowerCase() === 'authorization')?.[1];
  const credential = header?.replace(/^\S+\s+/, '').trim() ?? '';
  return credential.length < minSecretLength
    ? (text) => text
    : (text) => text.replaceAll(credential, redactedMark);
};

/** The Status's message as one line cut to `maxServerMessageChars`, as a field to spread, or nothing. */
const serverMessageOf = (
  answer: Record<string, unknown> | undefined,
  scrub: (text: string) => string,
): { serverMessage?: string } => {
  const message = answer?.['message'];
  if (typeof message !== 'string') return {};
  const line = scrub(message)
    .replace(/[\s\p{Cc}]+/gu, ' ')
    .trim()
    .slice(0, maxServerMessageChars);
  return line === '' ? {} : { serverMessage: line };
};

/** Whether the request carried a credential: a bearer or basic header, or a client certificate (file, data, exec). */
const sentCredentials = (config: KubeConfig, headers: Record<string, string>): boolean => {
  const user = config.getCurrentUser();
  return (
    Object.keys(headers).some((name) => name.toLowerCase() === 'authorization') ||
    Boolean(user?.certData ?? user?.certFile) ||
    usesExecPlugin(user)
  );
};

/**
 * A server URL without the slashes it ends in: client-go joins it to the path as paths, so a kubeconfig's `server:
 * https://host:6443/` works with kubectl, and the API server answers `//api/…` with 404.
 */
const withoutTrailingSlashes = (server: string): string => {
  let end = server.length;
  while (end > 0 && server[end - 1] === '/') end -= 1;
  return server.slice(0, end);
};

/**
 * `work`, or the signal's reason once it aborts first: the credentials (an exec plugin, up to its own deadline) hold
 * no request past the deadline its caller gave it.
 */
const untilAborted = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(signal.reason as Error);
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });

/** A write to the API server: its method, and the JSON body with its content type (a merge patch for PATCH). */
export interface KubeWrite {
  readonly method: 'POST' | 'PATCH';
  readonly body: object;
  readonly contentType: 'application/json' | 'application/merge-patch+json';
}

/**
 * Sends `path?query` to `config`'s current cluster with its TLS settings and credentials (the client's own
 * `applySecurityAuthentication`): a GET, or `write`; resolves with a 2xx answer. A redirect is refused, not
 * followed: the credential goes only to the API server it was configured for. `410 Gone` (the version is
 * compacted away) throws a `KubeRelistNeeded`, any other status a `KubeStatusError` (its Status read bounded).
 */
export const kubeCall = async (
  kube: KubeClientModule,
  config: KubeConfig,
  path: string,
  query: Readonly<Record<string, string | number | boolean | undefined>>,
  signal: AbortSignal,
  accept?: string,
  write?: KubeWrite,
): Promise<Response> => {
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(withoutTrailingSlashes(cluster.server) + path);
  for (const [key, value] of Object.entries(query))
    if (value !== undefined) url.searchParams.set(key, String(value));
  const request = new kube.RequestContext(
    url.toString(),
    write ? kube.HttpMethod[write.method] : kube.HttpMethod.GET,
  );
  await untilAborted(config.applySecurityAuthentication(request), signal);
  const headers = request.getHeaders();
  const response = await undici().fetch(url, {
    method: write?.method ?? 'GET',
    headers: {
      ...headers,
      ...(accept === undefined ? {} : { Accept: accept }),
      ...(write === undefined ? {} : { 'Content-Type': write.contentType }),
    },
    ...(write === undefined ? {} : { body: JSON.stringify(write.body) }),
    dispatcher: request.getDispatcher(),
    signal,
    redirect: 'manual',
  });
  if (response.status >= 200 && response.status < 300) return response;
  const { status } = response;
  if (status >= 300 && status < 400) {
    await response.body?.cancel().catch(() => undefined);
    throw new KubeStatusError(
      `HTTP ${status}: a redirect, not followed (the token goes only to the API server itself)`,
      { status },
    );
  }
  const answer = await statusOf(response);
  if (status === 410) throw new KubeRelistNeeded('the API server answered 410 Gone: the version is too old');
  const renewable = status === 401 && usesExecPlugin(config.getCurrentUser());
  if (renewable) execCredentialRefused(config.getCurrentUser());
  const scrub = withoutCredential(headers);
  throw new KubeStatusError(scrub(response.statusText) || STATUS_CODES[status] || `HTTP ${status}`, {
    status,
    anonymous: namesAnonymousUser(answer) || !sentCredentials(config, headers),
    user: refusedUser(answer),
    ...(renewable ? { renewable } : {}),
    ...serverMessageOf(answer, scrub),
  });
};

/**
 * What may be said of an error a list, watch or write failed with: a `KubeStatusError`'s status (with whether the
 * server saw no credentials, or whom it refused), else a network error's code (fetch wraps each in a `fetch failed`
 * whose cause it is), else its message, which here holds what the answer broke, a timeout, or a file read before
 * anything was sent (a token file gone: ENOENT is no network error), never the request and its token.
 */
export const kubeFailureOf = (cause: unknown): KubeFailure => {
  if (cause instanceof KubeStatusError) return cause.failure;
  const failed = cause instanceof TypeError && cause.message === 'fetch failed' ? cause.cause : undefined;
  const code = failed === undefined ? undefined : errorCode(failed);
  if (code === undefined) return { message: errorMessage(cause) };
  if (tlsFailureKind(code) === undefined) return { code };
  // A TLS failure's own words (they hold no request): OpenSSL's string said in words, without Node's advice of
  // --use-system-ca, which the client (given the cluster's CA) does not take.
  const said = errorMessage(failed).replace(/; if the root CA is installed locally, try running .*$/s, '');
  return { code, message: (tlsHandshakeReason(said) ?? said).slice(0, 200) };
};
