/**
 * boundedServer: an HTTP server whose clients cannot starve it. Every port modelsync opens (the HTTP surface, a
 * later proxy) is made here, so each gets the same bounds on connections, time and request size.
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

/** What one client, or many, may hold of a server. */
export interface ServerLimits {
  /**
   * Connections open at once. A connection past it first evicts the oldest one not being answered (idle
   * keep-alive, or still sending its head); when every one is being answered, the new one is closed at once.
   */
  readonly maxConnections: number;
  /** A request's line and headers must arrive within this; slower clients (slowloris) are cut (408). */
  readonly requestTimeoutMs: number;
  /**
   * The whole request, body included, must arrive within this (at least `requestTimeoutMs`, its default): a
   * proxied upload of a multi-MiB inference body on a slow link needs far longer than a head does.
   */
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
  requestTimeoutMs: 5000,
  idleTimeoutMs: 5000,
  maxHeaderBytes: 8 * 1024,
  maxHeadersCount: 64,
  maxRequestsPerSocket: 1000,
};

/**
 * Node checks the head and request timeouts only every `connectionsCheckingInterval` (30 s by default): check
 * often enough that a slow head is cut close to its timeout, not up to 30 s after it.
 */
const checkingIntervalMs = (limits: ServerLimits): number =>
  Math.max(50, Math.min(1000, Math.floor(limits.requestTimeoutMs / 4)));

/** Requests being answered on each connection: a connection with none can be evicted. */
const capConnections = (server: Server, maxConnections: number): void => {
  const answering = new Map<Socket, number>(); // in connection order: the first is the oldest
  server.on('connection', (socket: Socket) => {
    answering.set(socket, 0);
    socket.once('close', () => answering.delete(socket));
    if (answering.size <= maxConnections) return;
    for (const [held, requests] of answering)
      if (requests === 0 && held !== socket) return void held.destroy();
    socket.destroy(); // every other connection is being answered: this one waits for none of them
  });
  server.on('request', ({ socket }: IncomingMessage, response: ServerResponse) => {
    answering.set(socket, (answering.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const requests = answering.get(socket);
      if (requests !== undefined) answering.set(socket, requests - 1);
    });
  });
};

const tunnelText = 'CONNECT is not supported\n';
const tunnelRefused =
  'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain\r\n' +
  `Content-Length: ${tunnelText.length}\r\nConnection: close\r\n\r\n${tunnelText}`;

/**
 * CONNECT asks for a tunnel, which no port of modelsync opens. Without a 'connect' listener Node drops the socket
 * without a word; this answers 501 and closes it once the answer is out.
 */
const refuseTunnels = (server: Server): void => {
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined); // a client gone before the answer is out is nothing to report
    socket.end(tunnelRefused, () => socket.destroy());
  });
};

/** An HTTP server answering with `listener`, held to `limits` (not yet listening). */
export const boundedServer = (limits: ServerLimits, listener: RequestListener): Server => {
  const server = createServer(
    {
      maxHeaderSize: limits.maxHeaderBytes,
      // Node refuses a headersTimeout above requestTimeout, hence the floor.
      requestTimeout: Math.max(limits.bodyTimeoutMs ?? limits.requestTimeoutMs, limits.requestTimeoutMs),
      headersTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.idleTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(limits),
    },
    listener,
  );
  server.maxHeadersCount = limits.maxHeadersCount;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  server.setTimeout(limits.idleTimeoutMs); // no 'timeout' listener: Node destroys the silent socket
  capConnections(server, limits.maxConnections);
  refuseTunnels(server);
  return server;
};
