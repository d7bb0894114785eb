/** What both model-server clients share: where the server listens, how long calls may take, the index bounds. */
import type { Dispatcher } from '../net';
import { EffectError, retryableError } from '../core/errors';
import { modelNameProblem } from '../core/model-name';
import { redactUri } from '../core/redact';
import { discardBody, headerOf, httpCall, type HttpCallResponse } from '../net';

type HttpCallInit = Parameters<typeof httpCall>[1];

export interface ServerOptions {
  /** The HTTP root: `http://127.0.0.1:8000` (Triton), `http://127.0.0.1:8081` (TorchServe's management API). */
  readonly baseUrl: string;
  /** Timeout of index and unload calls, and of loads unless `loadTimeoutMs` is given; default 30 s. */
  readonly timeoutMs?: number;
  /** Timeout of a load, which returns once the model is loaded (TorchServe: a worker started); default 300 s. */
  readonly loadTimeoutMs?: number;
  /** The connection pool (a Network's `direct`: keep-alive, never through a proxy); default undici's global one. */
  readonly dispatcher?: Dispatcher;
}

/** One call to the server: `path` below its root, named `what` in errors, `ms` to answer. */
export type ServerCall = (
  method: HttpCallInit['method'],
  path: string,
  what: string,
  ms: number,
  signal: AbortSignal,
  more?: Pick<HttpCallInit, 'headers' | 'body'>,
) => Promise<HttpCallResponse>;

/** The server as messages name it (no user info or query), the timeouts, and the call to its root. */
export const serverEndpoint = (
  options: ServerOptions,
): { shown: string; timeoutMs: number; loadTimeoutMs: number; call: ServerCall } => {
  const base = options.baseUrl.replace(/\/+$/, '');
  return {
    shown: redactUri(base),
    timeoutMs: options.timeoutMs ?? 30_000,
    loadTimeoutMs: options.loadTimeoutMs ?? options.timeoutMs ?? 300_000,
    call: (method, path, what, ms, signal, more = {}) =>
      httpCall(below(base, path), {
        method,
        ...more,
        what,
        timeoutMs: ms,
        signal,
        dispatcher: options.dispatcher,
      }),
  };
};

/**
 * `path` (with its own query, if any) below the server's root `base`, whose query, if it has one (a token an auth
 * proxy before the server reads), stays the URL's query: appended to the text, every path went into that query
 * (`/?token=t/v2/repository/index` asks `/`), and every call got a 404 for good. A fragment is never sent.
 */
const below = (base: string, path: string): string => {
  const cut = base.search(/[?#]/);
  if (cut < 0) return `${base}${path}`;
  const split = path.indexOf('?');
  const pathOnly = split < 0 ? path : path.slice(0, split);
  const baseQuery = base.slice(cut).replace(/#.*$/s, '').replace(/^\?/, '');
  const query = [baseQuery, split < 0 ? '' : path.slice(split + 1)].filter((part) => part !== '').join('&');
  return `${base.slice(0, cut).replace(/\/+$/, '')}${pathOnly}${query === '' ? '' : `?${query}`}`;
};

/** `error` with its message, kind and status, retried or not as `retryable` says. */
export const withRetryable = (error: EffectError, retryable: boolean, message = error.message): EffectError =>
  new EffectError(message, retryable, { kind: error.kind, status: error.status, cause: error.cause });

/**
 * The bounds of one index or listing: its body (per page, for TorchServe) and the loaded names taken from it. A
 * server inventing names cannot make a resync read, remember or act on more than this (the repairs themselves are
 * capped by `--max-unlisted-unloads`); 100,000 is ten times the largest config measured (10,000 models).
 */
export const serverIndexLimits = { maxBytes: 16 * 1024 * 1024, maxModels: 100_000 } as const;

/**
 * The loaded names modelsync may act on: valid model names only (`.tmp-…`, a path are nobody's model
 * to repair), at most `serverIndexLimits.maxModels` of them, in the server's order.
 */
export const loadedModelNames = (names: Iterable<string>): Set<string> => {
  const taken = new Set<string>();
  for (const name of names) {
    if (taken.size >= serverIndexLimits.maxModels) break;
    if (modelNameProblem(name) === undefined) taken.add(name);
  }
  return taken;
};

/**
 * An answer that is a web page: a proxy's before the server (a login page, an ingress's 404), never the server's:
 * the V2 servers and TorchServe answer JSON, plain text or nothing.
 */
export const isHtml = (response: Pick<HttpCallResponse, 'headers'>): boolean =>
  /^\s*text\/html\b/i.test(headerOf(response.headers, 'content-type') ?? '');

/**
 * Reads off a 2xx answer to a load or unload; fails retryably on a web page: no server (`by`) answers with one, a
 * proxy before it does (its login page), and nothing was done (an unload taken as done would delete files held).
 */
export const notAPage = async (response: HttpCallResponse, what: string, done: string, by: string) => {
  await discardBody(response);
  if (!isHtml(response)) return;
  throw retryableError(
    'invalid-response',
    `${what} was answered ${response.status} with an HTML page, not by ${by} (a login page of a proxy before ` +
      `it?): the model is not taken as ${done}`,
  );
};
