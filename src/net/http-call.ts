/** httpCall: one undici request with timeouts and the caller's AbortSignal, whose failures come out as EffectErrors. */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { isLeft } from 'fp-ts/Either';
import type * as t from 'io-ts';
import { PathReporter } from 'io-ts/PathReporter';
import { errors, request, type Dispatcher } from './undici-core';
import { answerWithin } from './answer-within';
import { EffectError, httpStatusError, permanentError, retryableError, retryAfterOf } from '../core/errors';
import { parseJson } from '../core/json/json';
import { jsonObject } from '../core/json/json-object';
import { redactUri } from '../core/storage-uri';
import { timeoutOf, transportError } from './transport-error';
import { hasUserInfo } from '../core/redact';

/** A request: method, headers, body, what the call is (for messages), its timeout, signal and connection pool. */
export interface HttpCallInit {
  readonly method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'HEAD';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Names the call in error messages: `model server load of "m" (http://127.0.0.1:8000)`. */
  readonly what: string;
  /** How long the server may take to answer (headers), then each next part of the body (undici's own timers). */
  readonly timeoutMs: number;
  /** The caller's signal: aborting it stops the request (and any body read) at once. */
  readonly signal: AbortSignal;
  /** The connection pool (a Network's `direct` or `dispatcherFor(url)`); default undici's global one. */
  readonly dispatcher?: Dispatcher;
}

/** A response together with the call it answers, so body reads can name the call and tell a timeout apart. */
export interface HttpCallResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Dispatcher.ResponseData['body'];
  readonly init: HttpCallInit;
}

/** What callers do with any response body (undici's, a direct one): read it as chunks, drop it, destroy it. */
export interface ResponseBody extends AsyncIterable<Uint8Array> {
  dump(options?: { readonly limit?: number }): Promise<void>;
  destroy(error?: Error): unknown;
}

/** The first value of header `name`. */
export const headerOf = (
  headers: Readonly<Record<string, string | string[] | undefined>>,
  name: string,
): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** True for a 2xx status. */
export const isOk = ({ status }: { readonly status: number }): boolean => status >= 200 && status < 300;

// Error bodies only need their first words; a server answering a huge HTML page must not be buffered whole.
const maxErrorBodyBytes = 64 * 1024;
const defaultMaxBodyBytes = 16 * 1024 * 1024;
// An error body's words come at once or not at all: a server trickling them holds the failure no longer than this.
const errorBodyTimeoutMs = 10_000;

/**
 * Sends one request and resolves with the response whatever its status; the caller decides which statuses
 * succeed. Network failures, timeouts and aborts reject with a retryable EffectError, a URL that cannot be
 * requested at all with a permanent one. The timeout and the signal also cover reading the body.
 */
export const httpCall = async (url: string, init: HttpCallInit): Promise<HttpCallResponse> => {
  const { what, timeoutMs, signal, dispatcher, method, headers, body } = init;
  if (signal.aborted) throw transportError(signal.reason, { what, aborted: true });
  const parsed = httpUrl(url, what);
  try {
    const response = await answerWithin(timeoutMs, signal, (answerSignal) =>
      request(parsed, {
        method,
        headers,
        body,
        signal: answerSignal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        ...(dispatcher !== undefined ? { dispatcher } : {}),
      }),
    );
    return { status: response.statusCode, headers: response.headers, body: response.body, init };
  } catch (cause) {
    throw transportFailure(cause, init);
  }
};

/**
 * `url` (relative to `base`) parsed, when it can be requested: an unparseable URL or one with user:password is a
 * permanent `invalid-uri`, another protocol `unsupported-scheme`. Messages show the URL redacted.
 */
export const httpUrl = (url: string, what: string, base?: URL): URL => {
  let parsed: URL;
  try {
    parsed = new URL(url, base);
  } catch (cause) {
    throw permanentError('invalid-uri', `${what}: invalid URL ${JSON.stringify(redactUri(url))}`, cause);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw permanentError('unsupported-scheme', `${what}: unsupported URL protocol ${parsed.protocol}`);
  if (hasUserInfo(parsed))
    throw permanentError(
      'invalid-uri',
      `${what}: URLs with user:password are not supported; send a header instead`,
    );
  return parsed;
};

/**
 * `read` of `body` within `timeoutMs` in all: undici's body timeout is per wait between bytes, and a body that
 * trickles a byte within each would hold the call (and its slot) for as long as the server likes.
 */
const readWithin = async <T>(body: ResponseBody, timeoutMs: number, read: () => Promise<T>): Promise<T> => {
  const deadline = setTimeout(() => body.destroy(new errors.BodyTimeoutError()), timeoutMs);
  try {
    return await read();
  } finally {
    clearTimeout(deadline);
  }
};

/**
 * Reads the body as text (at most `maxBytes`, within the call's timeout in all); a reset, timeout or abort half-way
 * is a retryable EffectError.
 */
export const readText = async (
  { body, init }: HttpCallResponse,
  maxBytes = defaultMaxBodyBytes,
): Promise<string> => {
  try {
    const read = (): Promise<Buffer> => readCapped(body, maxBytes, () => new BodyTooLarge());
    return (await readWithin(body, init.timeoutMs, read)).toString('utf8');
  } catch (cause) {
    if (cause instanceof BodyTooLarge)
      throw retryableError('too-large', `${init.what}: response body is larger than ${maxBytes} bytes`);
    throw transportFailure(cause, init);
  }
};

/** Reads the body as JSON of type `codec`; anything else is a retryable `invalid-response` (a restarting server). */
export const readJson = async <A>(
  call: HttpCallResponse,
  codec: t.Decoder<unknown, A>,
  expected: string,
): Promise<A> => decodeJsonText(await readText(call), codec, call.init.what, expected);

/** `text`, a body `what` returned, parsed and decoded with `codec`; a bad one is a retryable `invalid-response`. */
export const decodeJsonText = <A>(
  text: string,
  codec: t.Decoder<unknown, A>,
  what: string,
  expected: string,
): A => {
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

// What an unread body may take to end before its connection is dropped instead of kept for the next request.
const discardWithinMs = 1000;

/**
 * Discards the body so the connection can be reused; one longer than 64 KiB, or that takes more than a second (a
 * trickle), is dropped with its connection. A failure here cannot change the outcome.
 */
export const discardBody = async ({ body }: { readonly body: ResponseBody }): Promise<void> => {
  const dump = () => body.dump({ limit: maxErrorBodyBytes });
  await readWithin(body, discardWithinMs, dump).catch(() => undefined);
};

/**
 * Drops `body` unread, with its connection. undici fails a body destroyed before its end with an AbortError (a turn
 * later when it was never read): with nobody reading, nobody listens, and that error was an uncaught exception.
 */
export const dropBody = ({ body }: { readonly body: ResponseBody }): void => {
  if (body instanceof Readable) body.on('error', () => undefined);
  body.destroy();
};

/** The EffectError (httpStatusError's rule) for a status not accepted, with the server's own reason (`errorText`). */
export const statusError = (call: HttpCallResponse): Promise<EffectError> =>
  responseStatusError(call.init.what, call);

/**
 * statusError for any response, named `what`, with the wait its Retry-After asks for; `readText` reads its body's
 * text (default: at most 64 KiB, '' when it cannot be read).
 */
export const responseStatusError = async (
  what: string,
  response: {
    readonly status: number;
    readonly body: ResponseBody;
    readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
  },
  readText: (body: ResponseBody) => Promise<string> = errorBodyText,
): Promise<EffectError> => {
  const body = await readText(response.body);
  const retryAfterMs = retryAfterOf(response.headers && headerOf(response.headers, 'retry-after'));
  return httpStatusError(what, response.status, errorText(body), retryAfterMs);
};

/**
 * An error body's text as every failure reads it: its first 64 KiB, within 10 s in all (or `withinMs`, if
 * shorter), '' when it cannot be read: the status alone already says what went wrong. A call's own timeout may be
 * minutes (a load), too long to wait for words.
 */
export const errorBodyText = (body: ResponseBody, withinMs = errorBodyTimeoutMs): Promise<string> =>
  readWithin(body, Math.min(withinMs, errorBodyTimeoutMs), () => readCapped(body, maxErrorBodyBytes)).then(
    (bytes) => bytes.toString('utf8'),
    () => '',
  );

const tracebackHead = 'Traceback (most recent call last):';

/**
 * A Python traceback (MLServer's 500 page, any debug server's) as its head and the exception that ended it: the
 * frames come first, kilobytes of them, and say nothing of why. The exception is the last traceback's (a chained
 * one lists the first cause first): its first unindented line after the frames, to the end.
 */
const tracebackReason = (text: string): string => {
  const lines = text.slice(text.lastIndexOf(tracebackHead) + tracebackHead.length).split('\n');
  const start = lines.findIndex((line) => line.trim() !== '' && !/^\s/.test(line));
  const exception = start < 0 ? lines.filter((line) => line.trim() !== '').slice(-1) : lines.slice(start);
  return `${tracebackHead} … ${exception.join(' ')}`;
};

/**
 * The server's reason in an error body: the `error`, `message` or `detail` string of a JSON object, a Python
 * traceback's exception, else the text.
 */
export const errorText = (body: string): string => {
  const text = body.trim();
  const json = text.startsWith('{') ? parseJson(text) : undefined;
  const fields = json === undefined || isLeft(json) ? undefined : jsonObject(json.right);
  for (const key of ['error', 'message', 'detail']) {
    const value = fields?.[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return (text.startsWith(tracebackHead) ? tracebackReason(text) : text).replace(/\s+/g, ' ');
};

const transportFailure = (cause: unknown, { what, signal, timeoutMs }: HttpCallInit): EffectError =>
  transportError(cause, {
    what,
    aborted: signal.aborted,
    timeout: timeoutOf(cause) === undefined ? undefined : `timed out after ${timeoutMs} ms`,
  });

// Thrown inside readCapped only; readText turns it into a message that names the call.
class BodyTooLarge extends Error {}

/**
 * Reads at most `maxBytes` of `body`: past them it throws `tooLarge()`, or without it returns the first `maxBytes`.
 * Leaving the loop early destroys a Readable body, cancels a web stream.
 */
export const readCapped = async (
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
  tooLarge?: () => Error,
): Promise<Buffer> => {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size > maxBytes) {
      if (tooLarge !== undefined) throw tooLarge();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
};
