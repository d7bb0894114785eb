/** httpGet: one GET, redirects followed by hand, credentials kept to their endpoint; Attempt: one download's end. */
import { request } from '../../net';
import { sameEndpoint } from '../../core/endpoint';
import { EffectError, permanentError } from '../../core/errors';
import {
  answerWithin,
  discardBody,
  httpUrl,
  type Network,
  timeoutOf,
  transportError,
  withFailures,
} from '../../net';
import { headerOf } from '../../net';
import type { BodyResponse } from './resumable-body';

/** How a GET reaches its server; times in ms. */
export interface GetSettings {
  /** Longest wait for the response headers, connecting included. */
  readonly connectTimeoutMs: number;
  /** Longest wait for the next bytes of the body. */
  readonly idleTimeoutMs: number;
  /** Proxies, CAs and pooled connections (default: undici's global pool, direct). */
  readonly network?: Network | undefined;
}

const maxRedirects = 10;
const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/** One download's cancellation; `failure` knows why it stopped better than the error that reaches the catch. */
export class Attempt {
  private readonly controller = new AbortController();
  private stopped: EffectError | undefined;
  private connectionLost = false;
  /** Aborts on the caller's abort and when the transfer guard stops the download. */
  readonly signal: AbortSignal = this.controller.signal;
  private readonly onOuterAbort = (): void => this.controller.abort(this.outer.reason);

  constructor(
    readonly what: string,
    private readonly outer: AbortSignal,
    private readonly timeouts: { readonly connectTimeoutMs: number; readonly idleTimeoutMs: number },
  ) {
    outer.addEventListener('abort', this.onOuterAbort, { once: true });
    if (outer.aborted) this.controller.abort(outer.reason);
  }

  /** Stops the download, to fail with `error` (the transfer guard found it too slow). */
  stop(error: EffectError): void {
    this.stopped ??= error;
    this.controller.abort();
  }

  /** The body; a failure is marked as the connection's (undici's body stays a FlowingBody). */
  watch(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
    return withFailures(body, (cause) => {
      this.connectionLost = true;
      return cause;
    });
  }

  /** The EffectError this download failed with, given what reached the catch. */
  failure(cause: unknown): EffectError {
    if (this.stopped !== undefined && !this.outer.aborted) return this.stopped;
    const timeout = timeoutOf(cause);
    const { idleTimeoutMs, connectTimeoutMs } = this.timeouts;
    const state = {
      what: this.what,
      aborted: this.outer.aborted,
      timeout:
        timeout === undefined
          ? undefined
          : timeout === 'body'
            ? `timed out: no data received for ${idleTimeoutMs} ms`
            : `timed out: no response within ${connectTimeoutMs} ms`,
      connectionLost: this.connectionLost,
    };
    return transportError(this.outer.aborted ? this.outer.reason : cause, state);
  }

  dispose(): void {
    this.outer.removeEventListener('abort', this.onOuterAbort);
  }
}

/**
 * `cause` of a request to `target` that a redirect from `url` led to another origin (a CDN, a presigned URL): wrapped
 * so that the failure names that origin (never its path and query: a signature), the server that failed, as its
 * first reason (`redirected to https://cdn:443: <cause>`). An EffectError, or a hop on `url`'s own origin, as it is.
 */
const redirectedFailure = (url: URL, target: URL, cause: unknown): unknown =>
  target.origin === url.origin || cause instanceof EffectError
    ? cause
    : new Error(`redirected to ${target.origin}`, { cause });

/**
 * GET `url` with redirects followed by hand, so that `credentials` (`<host>-headers`, a Hub token) go only to the
 * endpoint `url` names (scheme, host, port), never to a CDN, a presigned URL or plain http; `extraHeaders` (ranges)
 * go to every hop. `method` HEAD asks the same for the headers alone.
 */
export const httpGet = async (
  url: URL,
  settings: GetSettings,
  what: string,
  signal: AbortSignal,
  credentials: Readonly<Record<string, string>>,
  extraHeaders: Readonly<Record<string, string>> = {},
  method: 'GET' | 'HEAD' = 'GET',
): Promise<BodyResponse> => {
  let current = url;
  for (let hop = 0; ; hop++) {
    const target = current;
    const response = await answerWithin(settings.connectTimeoutMs, signal, (answerSignal) =>
      request(target, {
        method,
        headers: {
          // identity: a Content-Encoding: gzip tarball is stored as it is, never gunzipped on the way.
          'accept-encoding': 'identity',
          ...(sameEndpoint(url, target) ? credentials : {}),
          ...extraHeaders,
        },
        signal: answerSignal,
        headersTimeout: settings.connectTimeoutMs,
        bodyTimeout: settings.idleTimeoutMs,
        // undici's pool for the hop's URL: the Network's, direct or through its proxy.
        ...(settings.network !== undefined ? { dispatcher: settings.network.dispatcherFor(target) } : {}),
      }),
    ).catch((cause: unknown) => {
      throw redirectedFailure(url, target, cause);
    });
    const answer = {
      status: response.statusCode,
      headers: response.headers,
      body: response.body,
      url: current,
    };
    const location = headerOf(answer.headers, 'location');
    if (!redirectStatuses.has(answer.status) || location === undefined) return answer;
    await discardBody(answer);
    if (hop >= maxRedirects) {
      throw permanentError('invalid-response', `${what}: more than ${maxRedirects} redirects`);
    }
    current = httpUrl(location, `${what}: redirect`, current);
  }
};
