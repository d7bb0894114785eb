/** httpCall: one fetch with a timeout and the caller's AbortSignal, whose failures come out as EffectErrors. */
import { isLeft } from 'fp-ts/Either';
import type * as t from 'io-ts';
import { PathReporter } from 'io-ts/PathReporter';
import { EffectError, httpStatusError, permanentError, retryableError } from '../core/errors';
import { parseJson } from '../core/json';
import { redactUri } from '../core/storage-uri';
import { transportError } from './transport-error';

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

/**
 * Sends one request and resolves with the response whatever its status; the caller decides which statuses
 * succeed. Network failures, timeouts and aborts reject with a retryable EffectError, a URL that cannot be
 * fetched at all with a permanent one. The timeout and the signal also cover reading the body.
 */
export const httpCall = async (url: string, init: HttpCallInit): Promise<HttpCallResponse> => {
  const { what, timeoutMs, signal, ...requestInit } = init;
  if (signal.aborted) throw transportError(signal.reason, { what, aborted: true });
  const parsed = httpUrl(url, what);
  const timeout = AbortSignal.timeout(timeoutMs);
  const timedOut = (): boolean => timeout.aborted && !signal.aborted;
  try {
    const response = await fetch(parsed, { ...requestInit, signal: AbortSignal.any([signal, timeout]) });
    return { response, init, timedOut };
  } catch (cause) {
    throw transportFailure(cause, init, timedOut());
  }
};

/**
 * The Fetch standard's "bad ports" (https://fetch.spec.whatwg.org/#bad-port), which fetch never connects to: it
 * fails with a bare "bad port" that would pass for a network failure and be retried for nothing.
 */
export const fetchBadPorts: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
  109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
  526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/**
 * `url` (relative to `base`, if given) parsed, when fetch can use it: an unparseable URL, one with user:password
 * (fetch refuses credentials in URLs with a vague TypeError; say why) or one on a bad port is a permanent
 * `invalid-uri`, another protocol `unsupported-scheme`.
 * Messages show the URL redacted.
 */
export const httpUrl = (url: string, what: string, base?: URL): URL => {
  let parsed: URL;
  try {
    parsed = new URL(url, base);
  } catch (cause) {
    throw permanentError('invalid-uri', `${what}: invalid URL ${JSON.stringify(redactUri(url))}`, cause);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw permanentError('unsupported-scheme', `${what}: unsupported URL protocol ${parsed.protocol}`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw permanentError(
      'invalid-uri',
      `${what}: URLs with user:password are not supported; send a header instead`,
    );
  }
  if (fetchBadPorts.has(Number(parsed.port))) {
    throw permanentError(
      'invalid-uri',
      `${what}: port ${parsed.port} is one fetch never connects to (the Fetch standard's "bad ports"); ` +
        'serve it on another port',
    );
  }
  return parsed;
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
      throw retryableError('too-large', `${init.what}: response body is larger than ${maxBytes} bytes`);
    }
    throw transportFailure(cause, init, timedOut());
  }
};

/**
 * Reads the body as JSON of type `codec`. A body that is not JSON, or not `expected`, is a retryable
 * `invalid-response`: a server mid-restart, or a proxy in front of it, may answer with anything.
 */
export const readJson = async <A>(
  call: HttpCallResponse,
  codec: t.Decoder<unknown, A>,
  expected: string,
): Promise<A> => {
  const { what } = call.init;
  const text = await readText(call);
  const json = parseJson(text);
  if (isLeft(json)) {
    const shown = text.trim().slice(0, 200);
    throw retryableError('invalid-response', `${what} returned a body that is not JSON: ${shown}`);
  }
  const decoded = codec.decode(json.right);
  if (isLeft(decoded)) {
    const problems = PathReporter.report(decoded).slice(0, 3).join('; ');
    throw retryableError('invalid-response', `${what} returned a body that is not ${expected}: ${problems}`);
  }
  return decoded.right;
};

/** Discards the body so the connection can be reused; a failure here cannot change the outcome. */
export const discardBody = async ({ response }: HttpCallResponse): Promise<void> => {
  await response.body?.cancel().catch(() => undefined);
};

/**
 * The EffectError for a status the caller does not accept: retryable or not by httpStatusError's rule, its
 * message carrying the server's own reason (`{"error": ...}`, TorchServe's `{"message": ...}`, or the text).
 */
export const statusError = (call: HttpCallResponse): Promise<EffectError> =>
  responseStatusError(call.init.what, call.response);

/** statusError for a bare fetch Response, named `what`. */
export const responseStatusError = async (what: string, response: Response): Promise<EffectError> => {
  let body = '';
  try {
    body = await readCapped(response, maxErrorBodyBytes, true);
  } catch {
    // The status alone already says what went wrong; a body that cannot be read adds nothing.
  }
  return httpStatusError(what, response.status, errorText(body));
};

/** The server's reason in an error body: the `error`, `message` or `detail` string of a JSON object, else the text. */
export const errorText = (body: string): string => {
  const text = body.trim();
  const json = text.startsWith('{') ? parseJson(text) : undefined;
  if (json !== undefined && !isLeft(json) && typeof json.right === 'object' && json.right !== null) {
    const fields = json.right as Record<string, unknown>;
    for (const key of ['error', 'message', 'detail']) {
      const value = fields[key];
      if (typeof value === 'string' && value.trim() !== '') return value.trim();
    }
  }
  return text.replace(/\s+/g, ' ');
};

const transportFailure = (cause: unknown, init: HttpCallInit, timedOut: boolean): EffectError =>
  transportError(cause, {
    what: init.what,
    aborted: init.signal.aborted,
    timeout: timedOut ? `timed out after ${init.timeoutMs} ms` : undefined,
  });

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
