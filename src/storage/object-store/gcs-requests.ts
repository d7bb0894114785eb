/**
 * GCS requests made by modelsync itself: the SDK supplies only the credentials (google-auth-library: ADC, a key
 * file, workload identity), the Network carries the requests, and the credentials go to the configured endpoint
 * alone. The SDK's own transport follows redirects keeping the token when only the port or scheme changes.
 */
import { stat } from 'node:fs/promises';
import type { Storage } from '@google-cloud/storage';
import { sameEndpoint } from '../../core/endpoint';
import { discardBody, httpCall, type HttpCallResponse, type Network } from '../../net';
import { lazyModule } from '../../core/lazy-module';
import { parseJson } from '../../core/json/json';
import { isRight } from 'fp-ts/Either';
import { storeStatusError } from './store-error';
import type { MinRate } from '../download-limits';
import { answerTo, errorAnswerText } from '../store-answer';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first gs:// model (lazy-module.ts) */
const gcsSdk = lazyModule(() => require('@google-cloud/storage') as typeof import('@google-cloud/storage'));

/** GCS's public JSON API endpoint. */
export const defaultGcsEndpoint = 'https://storage.googleapis.com';

type AuthClient = Storage['authClient'];
type Transporter = { configure(options: Record<string, unknown>): Record<string, unknown> };

/**
 * Stops an auth client's token requests from following redirects (google-auth-library's transporters follow
 * them and re-send a POST body, the subject token or assertion, wherever a 307 points). Its STS exchange has a
 * transporter of its own, not reachable through any option: both are set here.
 */
const patched = new WeakSet<object>();
const refuseTokenRedirects = (client: unknown): void => {
  const holders = [client, (client as { stsCredential?: unknown } | undefined)?.stsCredential];
  for (const holder of holders) {
    const transporter = (holder as { transporter?: Transporter } | undefined)?.transporter;
    if (transporter === undefined || typeof transporter.configure !== 'function') continue;
    if (patched.has(transporter)) continue;
    patched.add(transporter);
    const configure = transporter.configure.bind(transporter);
    transporter.configure = (options) => ({ ...configure(options), maxRedirects: 0 });
  }
};

/** The credentials of the current credentials file, made again when the file changes (a rotated key). */
export class GcsCredentials {
  private current: { readonly auth: AuthClient; readonly version: string } | undefined;

  /** `endpoint`: where the credentials belong; `credentialsFile`: where they come from. */
  constructor(private readonly settings: { readonly endpoint: string; readonly credentialsFile?: string }) {}

  /**
   * The Authorization header for a request to `url`: none when `url` is not at the configured endpoint, none for
   * a custom endpoint without a credentials file, none without application default credentials (public buckets).
   * A token exchange that fails rejects with the library's error.
   */
  async headersFor(url: URL): Promise<Readonly<Record<string, string>>> {
    const { endpoint, credentialsFile } = this.settings;
    if (!sameEndpoint(url, endpoint)) return {};
    if (credentialsFile === undefined && endpoint !== defaultGcsEndpoint) return {};
    const auth = await this.auth();
    try {
      refuseTokenRedirects(await auth.getClient());
      const headers = (await auth.getRequestHeaders(url.href)) as Record<string, string>;
      const authorization = headers['Authorization'] ?? headers['authorization'];
      return authorization === undefined ? {} : { authorization };
    } catch (cause) {
      // No credentials at all: anonymous, as the SDK does it (public buckets).
      if (credentialsFile === undefined && /Could not load the default credentials/.test(String(cause))) {
        return {};
      }
      throw cause;
    }
  }

  private async auth(): Promise<AuthClient> {
    const version = await this.fileVersion();
    if (this.current?.version !== version) {
      const { credentialsFile } = this.settings;
      const storage = new (gcsSdk().Storage)(
        credentialsFile === undefined ? {} : { keyFilename: credentialsFile },
      );
      this.current = { auth: storage.authClient, version };
    }
    return this.current.auth;
  }

  private async fileVersion(): Promise<string> {
    const file = this.settings.credentialsFile;
    if (file === undefined) return '';
    // A missing file is the library's to report (it names the file); a changed one is a new client.
    const stats = await stat(file).catch(() => undefined);
    return stats === undefined ? 'missing' : `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  }
}

/** How a client reaches its endpoint. */
export interface GcsReach {
  readonly credentials: GcsCredentials;
  readonly network: Network | undefined;
  /** The endpoint without its trailing `/`. */
  readonly base: string;
  /** Longest wait for an answer, and for the next bytes of a body. */
  readonly timeoutMs: number;
  /** Immediate retries of a list page that failed retryably. */
  readonly retries: number;
  /** The slowest an answer that is read whole (a page, an error) may come; absent: no minimum. */
  readonly minRate: MinRate | undefined;
}

/** One GET of the JSON API. */
export interface GcsGet {
  readonly url: URL;
  readonly what: string;
  readonly phase: 'list' | 'read';
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
}

/** How readAnswer reads the answer `call` to `url`: the cap of one answer, the minimum rate. */
export const answerOf = (reach: GcsReach, call: HttpCallResponse, url: URL) => ({
  what: answerTo('GCS', 'GET', url),
  contentLength: call.headers['content-length'],
  minRate: reach.minRate,
});

/**
 * Sends `get` with the credentials its URL may have, through the reach's network (its proxy, CAs, keep-alive). A
 * redirect is refused, not followed: no GCS API answers one, and credentials must not go where it points.
 */
export const gcsGet = async (reach: GcsReach, get: GcsGet): Promise<HttpCallResponse> => {
  const { url, what, phase, signal } = get;
  const authorization = await reach.credentials.headersFor(url);
  const call = await httpCall(url.href, {
    method: 'GET',
    what,
    timeoutMs: reach.timeoutMs,
    signal,
    headers: { ...get.headers, ...authorization },
    ...(reach.network !== undefined ? { dispatcher: reach.network.dispatcherFor(url) } : {}),
  });
  if (call.status >= 300 && call.status < 400) {
    await discardBody(call);
    const detail = 'a redirect, not followed (the credentials go only to the GCS endpoint)';
    throw storeStatusError({ what, status: call.status, phase, detail });
  }
  if (call.status >= 400) {
    const body = await errorAnswerText(call.body, answerOf(reach, call, url));
    throw storeStatusError({ what, status: call.status, phase, detail: apiErrorDetail(body) });
  }
  return call;
};

/** The API's own words in a JSON error body: `reason: message` (`notFound: The specified bucket does not exist.`). */
const apiErrorDetail = (body: string): string => {
  const parsed = parseJson(body);
  if (!isRight(parsed) || typeof parsed.right !== 'object' || parsed.right === null) return body.trim();
  const fields = parsed.right as {
    error?: { message?: unknown; errors?: ReadonlyArray<{ reason?: unknown }> } | string;
    error_description?: unknown;
  };
  const error = fields.error;
  if (typeof error !== 'object') {
    const text = fields.error_description ?? error;
    return typeof text === 'string' ? text : body.trim();
  }
  const message = typeof error.message === 'string' ? error.message : '';
  const reason = error.errors?.[0]?.reason;
  return typeof reason === 'string' && !message.includes(reason) ? `${reason}: ${message}` : message;
};
