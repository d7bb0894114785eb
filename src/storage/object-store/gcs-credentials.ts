/**
 * The credentials of GCS requests: the SDK's auth client (google-auth-library: ADC, a key file, workload identity),
 * made again when the key file changes, its token sent to the configured endpoint alone and its token requests
 * never redirected; and what a refused token request says.
 */
import { readFile } from 'node:fs/promises';
import type { Agent } from 'node:http';
import type { Storage } from '@google-cloud/storage';
import { sameEndpoint } from '../../core/endpoint';
import { permanentError } from '../../core/errors';
import { isJsonObject } from '../../core/json/json-object';
import { lazyModule } from '../../core/lazy-module';
import { credentialsFileVersion } from './credentials-file';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first gs:// model (lazy-module.ts) */
const gcsSdk = lazyModule(() => require('@google-cloud/storage') as typeof import('@google-cloud/storage'));

/** GCS's public JSON API endpoint. */
export const defaultGcsEndpoint = 'https://storage.googleapis.com';

type AuthClient = Storage['authClient'];
type Transporter = { configure(options: Record<string, unknown>): Record<string, unknown> };

/** The node:http(s) agent a request to a URL goes by (`Network.agentFor`: its proxy rules, its CAs). */
export type AgentFor = (url: URL) => Agent;

/**
 * Stops an auth client's token requests from following redirects (google-auth-library's transporters follow
 * them and re-send a POST body, the subject token or assertion, wherever a 307 points) and, with `agentFor`, sends
 * them by the Network as the GCS requests go (else gaxios picks a proxy by rules of its own: HTTP_PROXY for https,
 * no CIDR in NO_PROXY; and trusts Node's CAs only). Its STS exchange has a transporter of its own, not reachable
 * through any option: both are set here.
 */
const patched = new WeakSet<object>();
const routeTokenRequests = (client: unknown, agentFor: AgentFor | undefined): void => {
  const holders = [client, (client as { stsCredential?: unknown } | undefined)?.stsCredential];
  for (const holder of holders) {
    const transporter = (holder as { transporter?: Transporter } | undefined)?.transporter;
    if (transporter === undefined || typeof transporter.configure !== 'function') continue;
    if (patched.has(transporter)) continue;
    patched.add(transporter);
    const configure = transporter.configure.bind(transporter);
    transporter.configure = (options) => {
      const configured = configure(options);
      const url = configured['url'];
      const target = typeof url === 'string' ? URL.parse(url) : url instanceof URL ? url : null;
      const agent = agentFor !== undefined && target !== null ? { agent: agentFor(target) } : {};
      return { ...configured, ...agent, maxRedirects: 0 };
    };
  }
};

/** The permanent failure of a credentials file no retry can mend (`why` never quotes its content: a key). */
const unusableFile = (file: string, why: string) =>
  permanentError('refused', `the GCS credentials file ${file} ${why}`);

/** Fails unless `file` (present, checked by credentialsFileVersion) holds a JSON object, as every credentials file does. */
const mustHoldJson = async (file: string): Promise<void> => {
  const text = await readFile(file, 'utf8').catch((cause: unknown) => {
    throw unusableFile(file, `cannot be read: ${(cause as Error).message}`);
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text, a private key maybe.
    throw unusableFile(file, 'is no JSON credentials file');
  }
  if (!isJsonObject(parsed)) throw unusableFile(file, 'is no JSON credentials file');
};

/**
 * Whether the library failed before any request (no `config` of a request, no `response`): on the file's content
 * (a key without its fields, one OpenSSL cannot decode), which no retry mends; a token request's own failure
 * (a reset, a refusal) carries both.
 */
const failedOnTheFile = (cause: unknown): boolean =>
  typeof cause === 'object' && cause !== null && !('config' in cause) && !('response' in cause);

/**
 * The Authorization header for a request to a URL, from the credentials of `credentialsFile` (made again when the
 * file changes: a rotated key): none when the URL is not at `endpoint`, none for a custom endpoint without a
 * credentials file, none without application default credentials (public buckets). A credentials file that is
 * missing, no JSON or not credentials the library can use fails for good (`refused`, naming it); a token exchange
 * that fails rejects with the library's error.
 */
export const gcsAuthorization = (
  endpoint: string,
  credentialsFile: string | undefined,
  agentFor?: AgentFor,
) => {
  let current: { readonly auth: AuthClient; readonly version: string } | undefined;
  return async (url: URL): Promise<Readonly<Record<string, string>>> => {
    if (!sameEndpoint(url, endpoint)) return {};
    if (credentialsFile === undefined && endpoint !== defaultGcsEndpoint) return {};
    // A missing file is the library's to report (it names the file); a changed one is a new client. The library
    // reads it whole, whatever it is: a device without end, a FIFO or a huge file is not handed over.
    const version = credentialsFile === undefined ? '' : await credentialsFileVersion(credentialsFile, 'GCS');
    if (credentialsFile !== undefined && version === 'missing')
      throw unusableFile(credentialsFile, 'does not exist');
    if (current?.version !== version) {
      if (credentialsFile !== undefined) await mustHoldJson(credentialsFile);
      const settings = credentialsFile === undefined ? {} : { keyFilename: credentialsFile };
      current = { auth: new (gcsSdk().Storage)(settings).authClient, version };
    }
    const { auth } = current;
    try {
      routeTokenRequests(await auth.getClient(), agentFor);
      const headers = (await auth.getRequestHeaders(url.href)) as Record<string, string>;
      const authorization = headers['Authorization'] ?? headers['authorization'];
      return authorization === undefined ? {} : { authorization };
    } catch (cause) {
      // No credentials at all: anonymous, as the SDK does it (public buckets).
      if (credentialsFile === undefined && /Could not load the default credentials/.test(String(cause))) {
        return {};
      }
      if (credentialsFile !== undefined && failedOnTheFile(cause))
        throw unusableFile(credentialsFile, `cannot be used: ${(cause as Error).message}`);
      throw cause;
    }
  };
};

/** What a failed token request carries: the HTTP status as `status` or `code`, the server's words. */
export interface AuthFailure {
  readonly code?: unknown;
  readonly status?: unknown;
  readonly message?: unknown;
  readonly response?: { readonly status?: unknown };
}

export const statusOf = (failure: AuthFailure): number | undefined =>
  [failure.code, failure.status, failure.response?.status].find(
    (value): value is number => typeof value === 'number' && value >= 400 && value < 600,
  );
