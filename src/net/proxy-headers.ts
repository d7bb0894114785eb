/**
 * The header rules of the reverse proxy: which headers are end-to-end (passed on, the sender's case, order and
 * duplicates kept), which are about one hop (RFC 9110 §7.6.1, Go's list), and how a body is framed again.
 */
import type { IncomingMessage } from 'node:http';

/** Headers about one hop, not the message (RFC 9110 §7.6.1, Go's list): never passed on. */
const hopByHop: ReadonlySet<string> = new Set(
  (
    'connection keep-alive proxy-connection proxy-authenticate proxy-authorization ' +
    'te trailer transfer-encoding upgrade'
  ).split(' '),
);

/** Methods Node sends bodiless without a length; any other without a body gets `Content-Length: 0` (Go's way). */
const bodilessMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE']);

/** One message's headers with the hop-by-hop ones taken out, and what those said that the next hop needs. */
export interface Forwardable {
  /** The end-to-end headers, raw (name, value, …): the sender's case, order and duplicates. */
  readonly headers: string[];
  /** Framing: Content-Length is kept whatever Connection lists, Transfer-Encoding (chunks) is redone per hop. */
  length?: string;
  chunked?: boolean;
  /** The Transfer-Encoding values, joined: only `chunked` alone can be framed again without changing the body. */
  codings?: string;
  hasHost?: boolean;
  /** Why the request's Host header(s) are refused, as Go's server refuses them (400 before any handler). */
  hostProblem?: 'too many Host headers' | 'malformed Host header';
  /** The Trailer names, joined: announced again only when the next hop is chunked too. */
  trailer?: string;
  upgrade?: string;
  /** The name of a TE header asking for trailers: the one TE passed on (`TE: trailers`), as Go does. */
  teTrailers?: string;
  /** The X-Forwarded-For values it came with, joined, and the name they came under. */
  forwardedFor?: string;
  forwardedForName?: string;
}

/** The first value of each header Knative's `ForwardedShimHandler` reads, as Go's `Header.Get` gives it. */
export interface ShimInput {
  forwarded?: string;
  xForwardedFor?: string;
  xForwardedProto?: string;
  xForwardedHost?: string;
}

/** Takes a request header's value into `shim` when it is one the shim reads and the first of its name. */
const readForShim = (shim: ShimInput, lower: string, value: string): void => {
  if (lower === 'forwarded') shim.forwarded ??= value;
  else if (lower === 'x-forwarded-for') shim.xForwardedFor ??= value;
  else if (lower === 'x-forwarded-proto') shim.xForwardedProto ??= value;
  else if (lower === 'x-forwarded-host') shim.xForwardedHost ??= value;
};

/** Go's `strings.TrimSpace` on what a header value can hold (node:http has trimmed the ends of the value itself). */
const trimmed = (text: string): string => text.replace(/^[\t\n\v\f\r ]+|[\t\n\v\f\r ]+$/g, '');

/** One X-Forwarded-For node as a `for=` value: an address with a colon (IPv6, Knative's test) as `"[…]"`. */
const forNode = (node: string): string => (node.includes(':') ? `"[${node}]"` : node);

/**
 * The `Forwarded` header KServe's agent adds (Knative's `ForwardedShimHandler`, knative.dev/serving/pkg/queue):
 * none when the request has one (its first value not empty) or has no X-Forwarded-For, -Proto or -Host; else the
 * first X-Forwarded-For node with the host and proto (`for=1.2.3.4;host=h;proto=https`), then `, for=<node>` for
 * each further node, byte for byte as Knative writes it (an empty node included).
 */
export const forwardedShim = (shim: ShimInput): string | undefined => {
  const {
    forwarded = '',
    xForwardedFor: xff = '',
    xForwardedProto: proto = '',
    xForwardedHost: host = '',
  } = shim;
  if (forwarded !== '' || (xff === '' && proto === '' && host === '')) return undefined;
  const nodes: string[] = [];
  for (let from = 0; from < xff.length;) {
    const comma = xff.indexOf(',', from);
    const end = comma === -1 ? xff.length : comma;
    nodes.push(trimmed(xff.slice(from, end)));
    from = end + 1;
  }
  const first = nodes[0] ?? '';
  let value = xff === '' ? '' : `for=${forNode(first)}`;
  if (host !== '') value += `${first === '' ? '' : ';'}host=${host}`;
  if (proto !== '') value += `${first === '' && host === '' ? '' : ';'}proto=${proto}`;
  for (const node of nodes.slice(1)) value += `, for=${forNode(node)}`;
  return value;
};

export const joined = (before: string | undefined, value: string): string =>
  before === undefined ? value : `${before}, ${value}`;

/** Takes the headers named `lower` out of `message`'s end-to-end ones. */
const withoutHeader = (message: Forwardable, lower: string): void => {
  const { headers } = message;
  for (let i = headers.length - 2; i >= 0; i -= 2)
    if (headers[i]!.toLowerCase() === lower) headers.splice(i, 2);
};

/** The comma-separated tokens of `value`, trimmed and in lower case. */
export const tokens = (value: string): string[] =>
  value.split(',').map((token) => token.trim().toLowerCase());

/** Connection values that name no header (nearly every message's): nothing to split. */
const plainConnection = /^\s*(keep-alive|close)\s*$/i;

/** The header names the Connection headers of `raw` list: hop-by-hop for this one message. */
const connectionListed = (raw: ReadonlyArray<string>): ReadonlySet<string> | undefined => {
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection' && !plainConnection.test(raw[i + 1]!))
      for (const name of tokens(raw[i + 1]!)) (listed ??= new Set()).add(name);
  return listed;
};

/**
 * The bytes Go's server takes in a Host (`httpguts.ValidHostHeader`): a request with another (a space, `@`, `/`) or
 * with two Hosts is answered 400 there; passed on, a model server could read it otherwise than we did.
 */
const validHost = /^[0-9A-Za-z!$%&'()*+,\-.:;=[\]_~]*$/;

/** The end-to-end part of `raw` (a request's headers or a response's). */
export const forwardable = (raw: ReadonlyArray<string>, isRequest: boolean): Forwardable => {
  const listed = connectionListed(raw);
  const message: Forwardable = { headers: [] };
  const shim: ShimInput = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    // Knative's shim reads the request before Go's proxy takes out the headers its Connection lists.
    if (isRequest) readForShim(shim, lower, value);
    if (lower === 'content-length') message.length = value;
    else if (lower === 'host') {
      if (isRequest && message.hasHost === true) message.hostProblem = 'too many Host headers';
      else if (isRequest && !validHost.test(value)) message.hostProblem ??= 'malformed Host header';
      message.hasHost = true;
    } else if (lower === 'transfer-encoding') {
      message.chunked = true;
      message.codings = joined(message.codings, value);
    } else if (lower === 'trailer') message.trailer = joined(message.trailer, value);
    else if (lower === 'upgrade') message.upgrade = joined(message.upgrade, value);
    else if (lower === 'te') {
      if (isRequest && tokens(value).includes('trailers')) message.teTrailers = name;
    } else if (isRequest && lower === 'x-forwarded-for') {
      message.forwardedForName ??= name;
      if (listed?.has(lower) !== true) message.forwardedFor = joined(message.forwardedFor, value);
      continue;
    } else if (listed?.has(lower) === true) continue;
    if (!hopByHop.has(lower)) message.headers.push(name, value);
  }
  const added = isRequest ? forwardedShim(shim) : undefined;
  // The shim's header replaces any (empty) Forwarded; Go's proxy then drops it if Connection lists Forwarded.
  if (added !== undefined && listed?.has('forwarded') !== true) {
    if (shim.forwarded !== undefined) withoutHeader(message, 'forwarded');
    message.headers.push('Forwarded', added);
  }
  return message;
};

/**
 * A request target in absolute form (`http://host:8080/x?q`) as Go's server reads it (`url.ParseRequestURI`) and its
 * ReverseProxy sends it on: the path in origin form (`/x?q`, `/` when it has none) and the host (no user info),
 * which stands for the Host header (RFC 9112 §3.2.2). Undefined for a target in origin form.
 */
export const originForm = (target: string): { readonly path: string; readonly host: string } | undefined => {
  const match = /^[a-z][a-z\d+.-]*:\/\/([^/?]*)(.*)$/is.exec(target);
  if (match === null) return undefined;
  const [, authority = '', rest = ''] = match;
  return {
    host: authority.slice(authority.lastIndexOf('@') + 1),
    path: rest.startsWith('/') ? rest : `/${rest}`,
  };
};

/** The headers sent upstream: the client's end-to-end ones, its body framed again, and who the client is. */
export const upstreamHeaders = (request: IncomingMessage, message: Forwardable, host: string): string[] => {
  const absoluteHost = originForm(request.url ?? '')?.host ?? '';
  // A target's host stands for any Host the request came with, as in Go's server (an empty one does not).
  const headers =
    absoluteHost === ''
      ? message.headers
      : [
          ...message.headers.filter((_, i, all) => all[i - (i % 2)]!.toLowerCase() !== 'host'),
          'Host',
          absoluteHost,
        ];
  if (message.hasHost !== true && absoluteHost === '') headers.push('Host', host);
  if (message.teTrailers !== undefined) headers.push(message.teTrailers, 'trailers');
  if (message.chunked === true) {
    headers.push('Transfer-Encoding', 'chunked');
    if (message.trailer !== undefined) headers.push('Trailer', message.trailer);
  } else if (message.length === undefined && !bodilessMethods.has(request.method ?? 'GET'))
    headers.push('Content-Length', '0');
  // An IPv4 client on a dual-stack port as Go writes it (`10.1.2.3`), not by its IPv4-mapped address.
  const client = request.socket.remoteAddress?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  const forwardedFor = client === undefined ? message.forwardedFor : joined(message.forwardedFor, client);
  if (forwardedFor !== undefined) headers.push(message.forwardedForName ?? 'X-Forwarded-For', forwardedFor);
  return headers;
};

/** Whether the answer `status` to `request` has a body (RFC 9112 §6.3: not to HEAD, not a 204 or 304). */
export const bodyAllowed = (request: IncomingMessage, status: number): boolean =>
  request.method !== 'HEAD' && status !== 204 && status !== 304;

/** Node writes a body in chunks to an HTTP/1.1 client when it has no length, and only then can trailers follow. */
export const chunkedToClient = (request: IncomingMessage, status: number, message: Forwardable): boolean =>
  message.length === undefined && request.httpVersion === '1.1' && bodyAllowed(request, status);

/** The answer's body is framed by the close (to an HTTP/1.0 client, without a length): a close ends it as if whole. */
export const framedByClose = (request: IncomingMessage, status: number, message: Forwardable): boolean =>
  message.length === undefined && bodyAllowed(request, status) && !chunkedToClient(request, status, message);

/**
 * True when the message's body is coded other than in chunks alone (`gzip, chunked`): taking the chunks off and
 * framing it again would pass the gzip bytes on as the body itself. Go refuses such a request (501) and such an
 * answer (502), as nginx does.
 */
export const otherCodings = (message: Forwardable): boolean =>
  message.codings !== undefined && tokens(message.codings).join() !== 'chunked';

/** Takes the Content-Length headers out of `message` (an answer that has no body to frame). */
export const withoutLength = (message: Forwardable): void => {
  withoutHeader(message, 'content-length');
  delete message.length;
};

/** `[name, value]` pairs of a raw list, as `addTrailers` takes them. */
export const pairs = (raw: ReadonlyArray<string>): Array<[string, string]> =>
  raw.flatMap((name, i): Array<[string, string]> => (i % 2 === 0 ? [[name, raw[i + 1]!]] : []));

/**
 * Requests sent again when their kept-alive connection fails: Go's transport takes GET, HEAD, OPTIONS and TRACE, or
 * any with an Idempotency-Key; PUT and DELETE too here (idempotent, RFC 9110 §9.2.2). A bodiless POST (KServe's model
 * load) may have been taken before the connection closed, and is never made twice.
 */
const idempotentMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** Whether a bodiless `request` may be sent again when its kept-alive connection fails. */
export const sentTwiceSafely = ({ method = '', headers }: IncomingMessage): boolean =>
  idempotentMethods.has(method) ||
  headers['idempotency-key'] !== undefined ||
  headers['x-idempotency-key'] !== undefined;
