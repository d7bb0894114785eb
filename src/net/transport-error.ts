/** transportError: the one classification of an HTTP request that got no complete answer, for every HTTP edge. */
import { maxHeaderSize } from 'node:http';
import { EffectError, permanentError, retryableError } from '../core/errors';
import { tlsReason } from '../core/tls-reason';

/** What the caller knows about how the request ended, which the error that reaches its catch often does not say. */
export interface TransportState {
  /** Names the request in messages: `GET https://host/m.tar.gz`, `model server load of "m" (...)`. */
  readonly what: string;
  /** The caller's own signal aborted: whatever error followed, the request was aborted. */
  readonly aborted: boolean;
  /** Set when a timeout fired: how to say so after `what` (`timed out after 100 ms`). */
  readonly timeout?: string | undefined;
  /** The response had begun and its body broke off (as opposed to a request that never got an answer). */
  readonly connectionLost?: boolean;
}

// Thrown when the URL can never be requested; every other transport failure may pass.
const permanentCauseCodes = new Set(
  'ERR_INVALID_URL ERR_INVALID_ARG_TYPE ERR_INVALID_PROTOCOL UND_ERR_INVALID_ARG ERR_INVALID_CHAR'.split(' '),
);

const headOverflowCodes = new Set(['UND_ERR_HEADERS_OVERFLOW', 'HPE_HEADER_OVERFLOW']);

const timeoutCodes: Readonly<Record<string, 'connect' | 'headers' | 'body'>> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'headers',
  UND_ERR_BODY_TIMEOUT: 'body',
};

/** Which of undici's timeouts `cause` is (connecting, waiting for headers, waiting for body bytes), if one. */
export const timeoutOf = (cause: unknown): 'connect' | 'headers' | 'body' | undefined => {
  for (const { code } of causeChain(cause))
    if (typeof code === 'string' && Object.hasOwn(timeoutCodes, code)) return timeoutCodes[code];
  return undefined;
};

/**
 * The EffectError for a request that failed in transport: `aborted`, `timeout` (the caller's or undici's), an
 * EffectError thrown on the way as it is, `invalid-uri` for a URL that can never be used (permanent),
 * `invalid-response` for an answer whose head is over the limit (permanent: the server sends the same again), else
 * `network`, its message carrying the reason from the cause chain (`connect ECONNREFUSED 127.0.0.1:8000`).
 */
export const transportError = (cause: unknown, state: TransportState): EffectError => {
  const { what } = state;
  if (state.aborted) return retryableError('aborted', `${what} aborted`, cause);
  if (state.timeout !== undefined) return retryableError('timeout', `${what} ${state.timeout}`, cause);
  if (cause instanceof EffectError) return cause;
  const chain = causeChain(cause);
  const detail = describe(chain) ?? String(cause);
  if (timeoutOf(cause) !== undefined) return retryableError('timeout', `${what} timed out: ${detail}`, cause);
  if (chain.some(({ code }) => typeof code === 'string' && permanentCauseCodes.has(code)))
    return permanentError('invalid-uri', `${what} failed: ${detail}`, cause);
  // undici and node:http (the SDKs') read a head up to Node's limit (16 KiB, --max-http-header-size); a server
  // answers the same head again.
  if (chain.some(({ code }) => typeof code === 'string' && headOverflowCodes.has(code))) {
    const limit = `${Math.floor(maxHeaderSize / 1024)} KiB`;
    const why = `the answer's head (its status line and headers) is over the ${limit} a client reads`;
    return permanentError('invalid-response', `${what} failed: ${why}`, cause);
  }
  const failed = state.connectionLost === true ? ': connection lost' : ' failed';
  return retryableError('network', `${what}${failed}: ${detail}`, cause);
};

type Link = Readonly<Partial<Record<'message' | 'code' | 'cause', unknown>>>;

// Duck-typed, not `instanceof Error`: undici's errors may come from another realm (jest, vm contexts).
const causeChain = (cause: unknown): ReadonlyArray<Link> => {
  const chain: Link[] = [];
  // Bounded: a cause chain can loop.
  for (let link = cause; typeof link === 'object' && link !== null && chain.length < 5;) {
    chain.push(link);
    link = (link as Link).cause;
  }
  return chain;
};

// `fetch failed` says nothing; the useful part (`connect ECONNREFUSED 127.0.0.1:8000`) is further down the chain.
// A TLS failure is said in words (OpenSSL's error string, Node's advice of a flag NODE_OPTIONS refuses).
const describe = (chain: ReadonlyArray<Link>): string | undefined =>
  chain
    .map(({ message }) => (typeof message === 'string' ? (tlsReason(message) ?? message) : message))
    .filter((message) => typeof message === 'string' && message !== '' && message !== 'fetch failed')
    .join(': ') || undefined;
