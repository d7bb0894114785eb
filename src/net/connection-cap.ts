/**
 * capConnections: the most connections a server holds, and which one gives way to a new one: oldest first, one that
 * holds a place without using it (idle or still sending its head, draining after its answer, or a request body that
 * brought nothing for a second). Answers being written and bodies that progress never give way; for a crowd of
 * those, a few places past the cap are kept for what the server answers itself (its probes).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How many connections, and how many more past them for what the reserve serves. */
export interface ConnectionCap {
  /**
   * Connections open at once. One more evicts the oldest that holds its place without using it; when none does, it
   * takes a place in the reserve, or is closed at once when that is full too.
   */
  readonly maxConnections: number;
  /** Places past `maxConnections` for what the reserve serves (the probes): no crowd can lock the kubelet out. */
  readonly reservedConnections: number;
}

/** A request body being read on a connection: how long it has brought nothing while it was read (0 when paused). */
export interface BodyWatch {
  readonly stalledMs: () => number;
}

/** A body stalled this long gives its connection up to a new one when the cap is reached (it is not yet cut). */
export const stalledBodyGivesWayMs = 1000;

/** What the cap knows of one connection. */
interface Held {
  /** Answers not yet closed on it (more than one when requests are pipelined). */
  readonly answers: Set<ServerResponse>;
  /** Admitted past the cap: it carries only what the reserve serves. */
  readonly reserved: boolean;
  /** Its answer is out and it only waits for its client to stop sending before it closes. */
  lettingGo: boolean;
  body: BodyWatch | undefined;
}

/** Every connection of every capped server, by socket (a socket belongs to one server). */
const held = new WeakMap<Socket, Held>();

/** The connection's answer is out and what is left is a lingering close: it gives way to a new connection. */
export const letGo = (socket: Socket): void => {
  const state = held.get(socket);
  if (state !== undefined) state.lettingGo = true;
};

/** Whether an answer on the connection has begun: an answer written raw on it now would land inside that one. */
export const answerStarted = (socket: Socket): boolean =>
  [...(held.get(socket)?.answers ?? [])].some((response) => response.headersSent);

/** Tells the cap of the request body being read on `socket`. */
export const noteBody = (socket: Socket, body: BodyWatch): void => {
  const state = held.get(socket);
  if (state !== undefined) state.body = body;
};

/** Tells the cap that `body` is read or cut: its watch is dropped unless a later request's body has taken its place. */
export const forgetBody = (socket: Socket, body: BodyWatch): void => {
  const state = held.get(socket);
  // With pipelined requests, the first one's end comes after the second's body is noted: it must not clear that.
  if (state?.body === body) state.body = undefined;
};

const givesWay = (state: Held): boolean =>
  state.answers.size === 0 || state.lettingGo || (state.body?.stalledMs() ?? 0) >= stalledBodyGivesWayMs;

const timedOut = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';

/** Closes a connection that gives way: a body it was sending is told 408, as Node's own request timeout does. */
const evict = (socket: Socket, state: Held): void => {
  if (state.body !== undefined && !answerStarted(socket)) socket.write(timedOut);
  socket.destroy(); // at once: an evicted connection must not outlive its place
};

/** Holds `server` to `cap`; says whether a connection is in the reserve (then it carries only what that serves). */
export const capConnections = (server: Server, cap: ConnectionCap): ((socket: Socket) => boolean) => {
  const open = new Map<Socket, Held>(); // in connection order: the first is the oldest
  let reserved = 0;
  /** Evicts the oldest connection of the kind asked for that gives way; false when none does. */
  const evictOne = (inReserve: boolean): boolean => {
    for (const [socket, state] of open)
      if (state.reserved === inReserve && givesWay(state)) {
        open.delete(socket);
        if (inReserve) reserved--;
        evict(socket, state);
        return true;
      }
    return false;
  };
  /** Whether the new connection takes a place in the reserve; undefined when it has no place at all. */
  const place = (): boolean | undefined => {
    if (open.size - reserved < cap.maxConnections || evictOne(false)) return false;
    if (reserved < cap.reservedConnections || evictOne(true)) return true;
    return undefined;
  };
  server.on('connection', (socket: Socket) => {
    const inReserve = place();
    if (inReserve === undefined) return void socket.destroy(); // every place is being used: none waits
    const state: Held = { answers: new Set(), reserved: inReserve, lettingGo: false, body: undefined };
    open.set(socket, state);
    held.set(socket, state);
    if (inReserve) reserved++;
    socket.once('close', () => {
      if (open.delete(socket) && inReserve) reserved--;
    });
  });
  server.on('request', ({ socket }: IncomingMessage, response: ServerResponse) => {
    const answers = held.get(socket)?.answers;
    answers?.add(response);
    response.once('close', () => answers?.delete(response));
  });
  return (socket) => held.get(socket)?.reserved === true;
};
