/** httpCall: one fetch with a timeout and the caller's AbortSignal, whose failures come out as EffectErrors. */
import { EffectError, httpStatusError, permanentError, retryableError } from '../core/errors';

/** A request: fetch's options plus what the call is (for messages), its timeout and the caller's signal. */
export interface HttpCallInit extends Omit<RequestInit, 'signal'> {
  /** Names the call in error messages: `model server load of "m" (http://127.0.0.1:8000)`. */
  readonly what: string;
  /** How long the whole exchange may take, headers and body; the body keeps counting after httpCall returns. */
  readonly timeoutMs: number;
  /** The caller's signal: aborting it stops the request (and any body read) at once. */
  readonly signal: AbortSignal;
}

/** A response together with the call it answers, so body reads can name the call and tell a timeout apart. */
export interface HttpCallResponse {
  readonly response: Response;
  readonly init: HttpCallInit;
  /** True once the timeout fired: a body read that fails afterwards failed because of it. */
  readonly timedOut: () => boolean;
}

// Error bodies only need their first words; a server answering a huge HTML page must not be buffered whole.
const maxErrorBodyBytes = 64 * 1024;
const defaultMaxBodyBytes = 16 * 1024 * 1024;

// undici wraps transport failures as `TypeError('fetch failed', { cause })`; these causes can never succeed later.
const permanentCauseCodes = new Set(['ERR_INVALID_URL', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_PROTOCOL']);

/**
 * Sends one request and resolves with the response whatever its status; the caller decides which statuses
 * succeed. Network failures, timeouts and aborts reject with a retryable EffectError, a URL that cannot be
 * fetched at all with a permanent one. The timeout and the signal also cover reading the body.
 */
export const httpCall = async (url: string, init: HttpCallInit): Promise<HttpCallResponse> => {
  const { what, timeoutMs, signal, ...requestInit } = init;
  if (signal.aborted) throw abortedError(what, signal.reason);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw permanentError(`${what}: invalid URL ${JSON.stringify(url)}`, cause);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw permanentError(`${what}: unsupported URL protocol ${parsed.protocol}`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    // fetch refuses these outright with a vague TypeError; say why.
    throw permanentError(`${what}: URLs with user:password are not supported; send a header instead`);
  }
  const timeout = AbortSignal.timeout(timeoutMs);
  const timedOut = (): boolean => timeout.aborted && !signal.aborted;
  try {
    const response = await fetch(parsed, { ...requestInit, signal: AbortSignal.any([signal, timeout]) });
    return { response, init, timedOut };
  } catch (cause) {
    throw transportError(cause, init, timedOut());
  }
};

/** Reads the body as text (at most `maxBytes`); a reset, timeout or abort half-way is a retryable EffectError. */
export const readText = async (
  { response, init, timedOut }: HttpCallResponse,
  maxBytes = defaultMaxBodyBytes,
): Promise<string> => {
  try {
    return await readCapped(response, maxBytes);
  } catch (cause) {
    if (cause instanceof BodyTooLarge) {
      throw retryableError(`${init.what}: response body is larger than ${maxBytes} bytes`);
    }
    throw transportError(cause, init, timedOut());
  }
};

/** The EffectError for a failure while streaming the body yourself (e.g. into a file): timeout, abort or reset. */
export const bodyFailure = (cause: unknown, { init, timedOut }: HttpCallResponse): EffectError =>
  transportError(cause, init, timedOut());

/** Discards the body so the connection can be reused; a failure here cannot change the outcome. */
export const discardBody = async ({ response }: HttpCallResponse): Promise<void> => {
  await response.body?.cancel().catch(() => undefined);
};

/**
 * The EffectError for a status the caller does not accept: retryable or not by httpStatusError's rule, its
 * message carrying the server's own reason (`{"error": ...}`, TorchServe's `{"message": ...}`, or the text).
 */
export const statusError = async (call: HttpCallResponse): Promise<EffectError> => {
  let body = '';
  try {
    body = await readCapped(call.response, maxErrorBodyBytes, true);
  } catch {
    // The status alone already says what went wrong; a body that cannot be read adds nothing.
  }
  return httpStatusError(call.init.what, call.response.status, errorText(body));
};

/** The server's reason in an error body: the `error`, `message` or `detail` string of a JSON object, else the text. */
export const errorText = (body: string): string => {
  const text = body.trim();
  if (text.startsWith('{')) {
    try {
      const json: unknown = JSON.parse(text);
      if (typeof json === 'object' && json !== null) {
        const fields = json as Record<string, unknown>;
        for (const key of ['error', 'message', 'detail']) {
          const value = fields[key];
          if (typeof value === 'string' && value.trim() !== '') return value.trim();
        }
      }
    } catch {
      // Not JSON after all: fall through to the raw text.
    }
  }
  return text.replace(/\s+/g, ' ');
};

/** The retryable (or, for an unusable URL, permanent) EffectError for a request that got no complete answer. */
const transportError = (cause: unknown, init: HttpCallInit, timedOut: boolean): EffectError => {
  if (cause instanceof EffectError) return cause;
  if (init.signal.aborted) return abortedError(init.what, cause);
  if (timedOut) return retryableError(`${init.what} timed out after ${init.timeoutMs} ms`, cause);
  const detail = describeCause(cause);
  const code = causeCode(cause);
  return code !== undefined && permanentCauseCodes.has(code)
    ? permanentError(`${init.what} failed: ${detail}`, cause)
    : retryableError(`${init.what} failed: ${detail}`, cause);
};

const abortedError = (what: string, cause: unknown): EffectError => retryableError(`${what} aborted`, cause);

// `fetch failed` says nothing; the useful part (`connect ECONNREFUSED 127.0.0.1:8000`) is in the cause chain.
// Duck-typed, not `instanceof Error`: undici's errors may come from another realm (jest, vm contexts).
const describeCause = (cause: unknown): string => {
  const messages: string[] = [];
  for (const c of causeChain(cause)) {
    if (typeof c.message === 'string' && c.message !== '' && c.message !== 'fetch failed') {
      messages.push(c.message);
    }
  }
  return messages.length > 0 ? messages.join(': ') : String(cause);
};

const causeCode = (cause: unknown): string | undefined =>
  causeChain(cause)
    .map((c) => c.code)
    .find((code): code is string => typeof code === 'string');

const causeChain = (cause: unknown): Array<{ message?: unknown; code?: unknown }> => {
  const chain: Array<{ message?: unknown; code?: unknown; cause?: unknown }> = [];
  let link = cause;
  // Bounded: a cause chain can loop.
  while (typeof link === 'object' && link !== null && chain.length < 5) {
    const error = link as { message?: unknown; code?: unknown; cause?: unknown };
    chain.push(error);
    link = error.cause;
  }
  return chain;
};

// Thrown inside readCapped only; readText turns it into a message that names the call.
class BodyTooLarge extends Error {}

/** Reads at most `maxBytes` of the body; beyond that it fails, or with `truncate` returns what it has. */
const readCapped = async (response: Response, maxBytes: number, truncate = false): Promise<string> => {
  if (response.body === null) return '';
  // Node's typings leave the chunk type open; fetch bodies are byte streams.
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      if (truncate) break;
      throw new BodyTooLarge();
    }
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
};
