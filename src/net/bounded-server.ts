/**
 * boundedServer: an HTTP server whose clients cannot starve it: every port modelsync opens gets the same bounds on
 * connections, time and request size; an answer given before a request is read reaches its client
 * (`early-answer.ts`), and the probes always find a place (`connection-cap.ts`).
 */
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorCode } from '../core/errors';
import { answerStarted, capConnections, type ConnectionCap } from './connection-cap';
import { closeAfter, endAnswer } from './early-answer';

/** What one client, or many, may hold of a server. */
export interface ServerLimits extends ConnectionCap {
  /** A request's line and headers must arrive within this; slower clients (slowloris) are cut (408). */
  readonly requestTimeoutMs: number;
  /** The whole request, body included, within this (default and floor `requestTimeoutMs`): a proxied upload. */
  readonly bodyTimeoutMs?: number;
  /** An idle keep-alive connection, or one with no bytes either way (a client that stops reading), is closed. */
  readonly idleTimeoutMs: number;
  /** The request line and headers together, in bytes; more is answered 431 and the connection closed. */
  readonly maxHeaderBytes: number;
  /** Header lines read of one request; the rest are ignored. */
  readonly maxHeadersCount: number;
  /** Requests on one connection (pipelined or kept alive); later ones get 503 and the connection is closed. */
  readonly maxRequestsPerSocket: number;
}

/** The bounds of the HTTP surface unless flags say otherwise. */
export const defaultServerLimits: ServerLimits = {
  maxConnections: 64,
  reservedConnections: 16,
  requestTimeoutMs: 5000,
  idleTimeoutMs: 5000,
  maxHeaderBytes: 8 * 1024,
  maxHeadersCount: 64,
  maxRequestsPerSocket: 1000,
};

/** Node checks the head and request timeouts every `connectionsCheckingInterval` (30 s): a slow head is cut late. */
const checkingIntervalMs = (limits: ServerLimits): number =>
  Math.max(50, Math.min(1000, Math.floor(limits.requestTimeoutMs / 4)));

/** Node's own answers to a request it could not take (its `socketOnError`), by the code of the error. */
const clientErrorAnswers: Readonly<Record<string, string>> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

const tunnelText = 'CONNECT is not supported\n';
const tunnelRefused =
  'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain\r\n' +
  `Content-Length: ${tunnelText.length}\r\nConnection: close\r\n\r\n${tunnelText}`;
const busyText = 'busy: every connection is taken; try again\n';

/** An HTTP server (not yet listening) held to `limits`; `reserveServes`: what a reserve connection may carry. */
export const boundedServer = (
  limits: ServerLimits,
  listener: RequestListener,
  reserveServes: (request: IncomingMessage) => boolean = () => true,
): Server => {
  const server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    // Node refuses a headersTimeout above requestTimeout, hence the floor.
    requestTimeout: Math.max(limits.bodyTimeoutMs ?? limits.requestTimeoutMs, limits.requestTimeoutMs),
    headersTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: checkingIntervalMs(limits),
  });
  server.maxHeadersCount = limits.maxHeadersCount;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  server.setTimeout(limits.idleTimeoutMs); // no 'timeout' listener: Node destroys the silent socket
  const inReserve = capConnections(server, limits);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (!inReserve(request.socket) || reserveServes(request)) return void listener(request, response);
    // A request the reserve does not serve, on a connection in the reserve: 503, and the connection closed.
    response.writeHead(503, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': busyText.length,
      'retry-after': '1',
      connection: 'close',
    });
    endAnswer(request, response, busyText);
  });
  // A request Node cannot take (a head past its size, malformed, too slow) is answered as Node answers it, but the
  // connection closes only once its client has stopped sending (Node destroys it at once: a client still sending
  // its head or body then sees a reset instead of the 431).
  server.on('clientError', (error: Error, socket: Socket) => {
    if (socket.writableEnded) return; // answered already: the parser goes on failing on what still arrives
    const code = errorCode(error) ?? '';
    if (code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    if (answerStarted(socket)) {
      // What is written of the answer goes out before the close: Node corks the socket while a request is handled,
      // and its parser fails on the body in that same turn (a coding it cannot frame): the 501 to it was lost.
      while (socket.writableCorked > 0) socket.uncork();
      return void socket.destroy();
    }
    // A connection that never sent a byte is closed without a word, whichever of the idle and head timers ends it
    // (a 408 there reads as a failed request to a client that only opened a connection ahead of need).
    if (code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0) return void socket.destroy();
    const answer = clientErrorAnswers[code] ?? '400 Bad Request';
    closeAfter(socket, `HTTP/1.1 ${answer}\r\nConnection: close\r\n\r\n`);
  });
  // CONNECT asks for a tunnel, which no port of modelsync opens. Without a 'connect' listener Node drops the
  // socket without a word; this answers 501 and closes it once the answer is out and the client stopped sending.
  server.on('connect', (_request: IncomingMessage, socket: Duplex) =>
    closeAfter(socket as Socket, tunnelRefused),
  );
  return server;
};
