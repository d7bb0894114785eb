/**
 * oneAtATime: a connection's pipelined requests handled one at a time, as Go's server (KServe's agent) serves them.
 * Node's parser hands on every pipelined request as it reads it; proxied at once, one client connection could take
 * every upstream connection and hold a head per request without end. Here the next waits until the answer before
 * it is done; past `maxWaiting` waiting on one connection the connection is closed: no client pipelines that deep.
 * The socket is not paused: Node pauses and resumes it (and its parser) for its own backpressure, which a resume of
 * ours would undo.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** `handle` for one request at a time per connection; `onFlood` is told of a connection closed past `maxWaiting`. */
export const oneAtATime = (handle: Handler, maxWaiting: number, onFlood: () => void): Handler => {
  // A connection's waiting requests, present while one of its requests is handled.
  const waiting = new WeakMap<Socket, Array<readonly [IncomingMessage, ServerResponse]>>();
  const start = (socket: Socket, request: IncomingMessage, response: ServerResponse): void => {
    // A response's 'close' comes once it is done (or its connection gone), after Node gave the socket to the next.
    response.once('close', () => {
      const next = socket.destroyed ? undefined : waiting.get(socket)?.shift();
      if (next === undefined) return void waiting.delete(socket);
      start(socket, ...next);
    });
    handle(request, response);
  };
  return (request, response) => {
    const { socket } = request;
    if (socket.destroyed) return;
    const queue = waiting.get(socket);
    if (queue === undefined) {
      waiting.set(socket, []);
      return start(socket, request, response);
    }
    if (queue.length >= maxWaiting) {
      onFlood();
      return void socket.destroy();
    }
    queue.push([request, response]);
  };
};
