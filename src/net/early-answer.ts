/**
 * Answers given before a request's body is read (405, 413, 408, 431, 502, 503 …), and the close after them. The
 * kernel resets a connection closed with unread bytes, and a client that sends all before it reads (Python's
 * http.client) sees the reset, not the answer. So the answer goes out at once and what still comes is read and
 * dropped for a bounded moment before the close (Apache's lingering close), the connection giving way meanwhile.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { letGo } from './connection-cap';

/** After an early answer the client's bytes are read until `quietMs` without one (Apache's 2 s), `bytes` or `ms`. */
export const lingerBounds = { bytes: 16 * 2 ** 20, ms: 5000, quietMs: 2000 } as const;

/** The request announces a body: a length above 0, or chunks. */
export const announcesBody = (request: IncomingMessage): boolean =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;

/** The request announced a body not read whole yet: an answer now must close the connection after it. */
export const bodyUnread = (request: IncomingMessage): boolean => announcesBody(request) && !request.complete;

/** Reads and drops what `stream` still brings until it ends, `lingerBounds` are reached or it closes; then `done`. */
const drain = (stream: Readable, done: () => void): void => {
  let bytes = 0;
  const finish = (): void => {
    clearTimeout(timer);
    clearTimeout(quiet);
    stream.off('data', count).off('end', finish).off('close', finish);
    done();
  };
  const count = (chunk: Buffer): void => {
    bytes += chunk.length;
    if (bytes > lingerBounds.bytes) finish();
    else quiet.refresh();
  };
  // Unref'd: a lingering close never holds a stopping process up.
  const timer = setTimeout(finish, lingerBounds.ms).unref();
  const quiet = setTimeout(finish, lingerBounds.quietMs).unref();
  stream.on('data', count).once('end', finish).once('close', finish);
  stream.resume();
};

/**
 * Ends `response` (its head written, with `Connection: close` when `bodyUnread`) with `body`; with the request's
 * body unread, the answer goes out at once and ends once the rest is drained, within `lingerBounds`.
 */
export const endAnswer = (
  request: IncomingMessage,
  response: ServerResponse,
  body?: string | Buffer,
): void => {
  if (!bodyUnread(request) || request.destroyed) return void response.end(body);
  if (body === undefined) response.flushHeaders();
  else response.write(body);
  letGo(request.socket);
  request.unpipe();
  drain(request, () => {
    if (!response.destroyed) response.end();
  });
};

/**
 * Drops what is left of `request`'s body once its answer is out (the upstream answered without reading it all),
 * within `lingerBounds`, as Go's server reads at most 256 KiB after its handler: its connection is closed unless the
 * body ended by then.
 */
export const dropRestOfBody = (request: IncomingMessage): void => {
  request.unpipe();
  if (request.complete || request.destroyed) return void request.resume();
  drain(request, () => {
    if (!request.complete) request.socket.destroy();
  });
};

/** Writes a whole answer `text` on a connection no response owns (client error, CONNECT), then closes it likewise. */
export const closeAfter = (socket: Socket, text: string): void => {
  letGo(socket);
  socket.on('error', () => undefined); // a client gone before the answer is out is nothing to report
  socket.end(text);
  drain(socket, () => socket.destroy());
};
