/**
 * What the reverse proxy answers itself: its failures (short texts naming nothing of the pod, one warn line per kind
 * a second), `OPTIONS *`, and the upstream's interim answers passed on, each as Go's server and ReverseProxy do.
 */
import { STATUS_CODES, type IncomingMessage, type InformationEvent, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { endAnswer } from './early-answer';
import { forwardable, otherCodings, tokens, type Forwardable } from './proxy-headers';

/** What can go wrong with one exchange: each kind is logged at most once a second. */
export type FailureKind =
  'unreachable' | 'timeout' | 'cut' | 'stalled' | 'slow-body' | 'invalid-head' | 'refused' | 'pipelined';

// Short, and naming nothing of the pod: no address, port or error code reaches a client.
export const unreachableText = Buffer.from('the model server did not answer\n');
export const timeoutText = Buffer.from('the model server did not answer in time\n');
export const refusedText = Buffer.from('protocol upgrades and CONNECT are not proxied\n');
export const slowBodyText = Buffer.from('the request body did not arrive in time\n');
export const codingText = Buffer.from('transfer codings other than chunked are not proxied\n');

/**
 * The answer the proxy gives itself to a request it does not pass on, or undefined: 501 to a tunnel or an upgrade
 * (an `Upgrade: h2c` offer alone is ignored) and to a transfer coding other than chunked, 400 to a bad Host.
 */
export const refusalOf = (
  request: IncomingMessage,
  message: Forwardable,
): { readonly status: number; readonly text: Buffer } | undefined => {
  const upgrade = message.upgrade === undefined ? [] : tokens(message.upgrade);
  if (request.method === 'CONNECT' || upgrade.some((protocol) => protocol !== 'h2c'))
    return { status: 501, text: refusedText };
  if (otherCodings(message)) return { status: 501, text: codingText };
  if (message.hostProblem !== undefined)
    return { status: 400, text: Buffer.from(`400 Bad Request: ${message.hostProblem}`) };
  return undefined;
};

/**
 * `err` without `rawPacket`: Node puts the bytes its parser failed on (up to the whole head, 64 KiB, or a body's
 * chunk: headers with credentials, tensor data) on a parse error, and at debug the whole error is logged.
 */
const withoutRawPacket = (err: unknown): unknown => {
  // The error is only logged; the bytes are nobody's to keep.
  if (typeof err === 'object' && err !== null && 'rawPacket' in err) delete err.rawPacket;
  return err;
};

/**
 * A warn line per kind at most once a second, with how many of that kind went unlogged since; `clock` in ms, by
 * default one NTP never steps (set back an hour, the wall clock kept every line of a kind unlogged for that hour).
 */
export const rateLimitedWarn = (
  log: Logger,
  clock: () => number = () => performance.now(),
): ((kind: FailureKind, err?: unknown) => void) => {
  const last = new Map<FailureKind, { at: number; suppressed: number }>();
  return (kind, err) => {
    const now = clock();
    const previous = last.get(kind);
    if (previous !== undefined && now - previous.at < 1000) return void previous.suppressed++;
    last.set(kind, { at: now, suppressed: 0 });
    const suppressed = previous?.suppressed ?? 0;
    log.warn(
      { kind, suppressed, ...(err === undefined ? {} : { err: withoutRawPacket(err) }) },
      'proxy failure',
    );
  };
};

/** Answers `status` with `text` (closing the connection when asked), or cuts it if a head went out already. */
export const answer = (
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  text: Buffer,
  close: boolean,
): void => {
  if (response.headersSent || response.destroyed) return void response.destroy();
  const headers = ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(text.length)];
  // The reason given, not the response's: a writeHead that threw on the upstream's keeps its reason for the next.
  response.writeHead(
    status,
    STATUS_CODES[status] ?? '',
    close ? [...headers, 'Connection', 'close'] : headers,
  );
  endAnswer(request, response, text);
};

/**
 * `OPTIONS *` (a question to the server, not a resource) answered here, 200 with no body, as Go's server answers it
 * before any handler: KServe's agent never passes it on.
 */
export const answerGlobalOptions = (request: IncomingMessage, response: ServerResponse): void => {
  response.writeHead(200, ['Content-Length', '0']);
  endAnswer(request, response);
};

/** The most a client's connection may hold unsent for an interim answer to be queued behind it. */
const maxQueuedInterimBytes = 64 * 1024;

/**
 * The upstream's interim answer (1xx) passed on with its headers (but those for one hop), as Go's ReverseProxy does:
 * 103 Early Hints, 102 Processing. Written on the connection as it came (Node's `writeEarlyHints` refuses a Link
 * list in one line). Dropped, as advisory: a 100 (the server answered the client's `Expect` itself), to an HTTP/1.0
 * client (RFC 9110 §15.2), before its turn on a pipelined connection or after the final head, and while the client
 * is not reading: an upstream sending them without end grows no buffer.
 */
export const passInterim = (
  request: IncomingMessage,
  response: ServerResponse,
  interim: InformationEvent,
): void => {
  const { socket } = response;
  if (interim.statusCode === 100 || request.httpVersion === '1.0' || socket === null || response.headersSent)
    return;
  if (socket.writableLength > maxQueuedInterimBytes) return;
  const { headers } = forwardable(interim.rawHeaders, false);
  let head = `HTTP/1.1 ${interim.statusCode} ${STATUS_CODES[interim.statusCode] ?? 'Informational'}\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  socket.write(`${head}\r\n`, 'latin1'); // the parser's strings hold the bytes as latin1
};
