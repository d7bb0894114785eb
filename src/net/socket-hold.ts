/**
 * holdSocket: a client socket's idle timeout, off while any exchange on it waits on something other than the client
 * (a proxied request upstream, a readiness check on its probe), and the server's own back once none does. With
 * pipelined requests several exchanges hold one socket: the first to end must not put the timeout back under another.
 */
import type { Socket } from 'node:net';

/** Exchanges holding each socket. */
const holds = new WeakMap<Socket, number>();

/** The server's own idle timeout of `socket` (`server.setTimeout`), put back once no exchange holds it. */
const serverTimeoutOf = (socket: Socket): number =>
  (socket as Socket & { server?: { timeout?: number } }).server?.timeout ?? 0;

/** Holds `socket` (its idle timeout off; the holder bounds its own wait); returns the release, which runs once. */
export const holdSocket = (socket: Socket): (() => void) => {
  const count = holds.get(socket) ?? 0;
  holds.set(socket, count + 1);
  if (count === 0) socket.setTimeout(0);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    const left = (holds.get(socket) ?? 1) - 1;
    holds.set(socket, left);
    if (left === 0 && !socket.destroyed) socket.setTimeout(serverTimeoutOf(socket));
  };
};
