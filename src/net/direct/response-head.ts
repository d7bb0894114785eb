/** parseResponseHead: an HTTP/1.1 response head read off a socket, strictly, and how its body is framed. */
import type { IncomingHttpHeaders } from 'node:http';

/** Most bytes a response head may take (status line, fields, the empty line): S3's and GCS's are about 1 KiB. */
export const maxHeadBytes = 64 * 1024;
/** Most header fields one head may carry. */
export const maxHeaderFields = 256;

/** How the body that follows a head ends (RFC 9112 §6.3). */
export type BodyFraming =
  | { readonly _tag: 'none' }
  | { readonly _tag: 'length'; readonly bytes: number }
  | { readonly _tag: 'chunked' }
  | { readonly _tag: 'until-close' };

/** One parsed head. */
export interface ResponseHead {
  readonly status: number;
  /** Field names in lower case; a field sent more than once is its values joined with `, `, as Node's `http` does. */
  readonly headers: IncomingHttpHeaders;
  readonly framing: BodyFraming;
  /** The connection may carry another request once this body is read whole (HTTP/1.1, no `Connection: close`). */
  readonly reusable: boolean;
}

/** A head that does not follow the grammar: the connection is unusable and the answer untrusted. */
export class MalformedResponse extends Error {
  readonly code = 'MODELSYNC_MALFORMED_RESPONSE';
  constructor(why: string) {
    super(`malformed HTTP response: ${why}`);
    this.name = 'MalformedResponse';
  }
}

const statusLine = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;
const fieldName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Field values: visible characters, spaces and tabs, obs-text; no CR, LF, NUL or other controls.
const fieldValue = /^[\t\x20-\x7e\x80-\xff]*$/;
const decimal = /^\d{1,15}$/;

/**
 * `line` from `start` on without the spaces and tabs around it. A loop, not `/[\t ]+$/`: that regex backtracks
 * over every run of blanks not at the end, seconds of CPU for a 64 KiB value a hostile server can send.
 */
const trimmed = (line: string, start: number): string => {
  let end = line.length;
  while (start < end && (line[start] === ' ' || line[start] === '\t')) start++;
  while (end > start && (line[end - 1] === ' ' || line[end - 1] === '\t')) end--;
  return line.slice(start, end);
};

const tokensOf = (value: string | undefined): ReadonlyArray<string> =>
  (value ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '');

/**
 * How the body of a response with `status` and `headers` is framed: none for 1xx, 204 and 304; `chunked` when the
 * last transfer coding is chunked; until the connection closes for any other transfer coding, or with no length;
 * else its Content-Length, which must be one number (a list of equal numbers counts as one, as RFC 9110 §8.6 lets a
 * recipient take it). Throws MalformedResponse for a Content-Length that is not.
 */
const framingOf = (status: number, headers: IncomingHttpHeaders): BodyFraming => {
  if (status < 200 || status === 204 || status === 304) return { _tag: 'none' };
  const codings = tokensOf(headers['transfer-encoding']);
  if (codings.length > 0) return codings.at(-1) === 'chunked' ? { _tag: 'chunked' } : { _tag: 'until-close' };
  const length = headers['content-length'];
  if (length === undefined) return { _tag: 'until-close' };
  const values = new Set(length.split(',').map((value) => value.trim()));
  const [only] = values;
  if (values.size !== 1 || only === undefined || !decimal.test(only)) {
    throw new MalformedResponse(`Content-Length ${JSON.stringify(length.slice(0, 40))} is not one length`);
  }
  return { _tag: 'length', bytes: Number(only) };
};

/**
 * The head at the start of `bytes` when it is complete (ended by an empty line): the head and where its body
 * starts; undefined while more bytes are needed. Strict where a lenient reading could be smuggled past: CRLF line
 * ends only, no folded lines, no space before a field's colon, field names as tokens, no control characters in
 * values, at most `maxHeaderFields` fields and `maxHeadBytes` bytes (throws MalformedResponse for each).
 */
export const parseResponseHead = (
  bytes: Uint8Array,
): { readonly head: ResponseHead; readonly bodyStart: number } | undefined => {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = buffer.indexOf('\r\n\r\n', 0, 'latin1');
  if (end < 0) {
    if (buffer.byteLength >= maxHeadBytes)
      throw new MalformedResponse(`head longer than ${maxHeadBytes} bytes`);
    return undefined;
  }
  if (end + 4 > maxHeadBytes) throw new MalformedResponse(`head longer than ${maxHeadBytes} bytes`);
  const lines = buffer.toString('latin1', 0, end).split('\r\n');
  const first = statusLine.exec(lines[0]!);
  if (first === null) throw new MalformedResponse(`status line ${JSON.stringify(lines[0]!.slice(0, 60))}`);
  if (lines.length - 1 > maxHeaderFields) throw new MalformedResponse(`more than ${maxHeaderFields} fields`);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    const value = trimmed(line, colon + 1);
    if (!fieldName.test(name) || !fieldValue.test(value)) {
      throw new MalformedResponse(`field line ${JSON.stringify(line.slice(0, 60))}`);
    }
    const key = name.toLowerCase();
    headers[key] = Object.hasOwn(headers, key) ? `${headers[key]}, ${value}` : value;
  }
  const status = Number(first[2]);
  const framing = framingOf(status, headers);
  const http11 = first[1] === '1';
  const closes = tokensOf(headers['connection']).includes('close');
  // A body framed by both a transfer coding and a length is read by the coding, and the connection is not trusted
  // with another request (RFC 9112 §6.3, item 3).
  const ambiguous = headers['transfer-encoding'] !== undefined && headers['content-length'] !== undefined;
  return {
    head: {
      status,
      headers,
      framing,
      reusable: http11 && !closes && !ambiguous && framing._tag !== 'until-close',
    },
    bodyStart: end + 4,
  };
};
