/** A raw TCP client for a server's own bounds: bytes written as they are, what came back, when it closed. */
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** One client connection. */
export interface RawSocket {
  readonly socket: Socket;
  /** Everything the server sent so far. */
  readonly received: () => string;
  /** Resolves once the server closed the connection (or it failed), with the ms since it opened. */
  readonly closed: Promise<number>;
  /** Whether it is still open. */
  readonly open: () => boolean;
}

/** Connects to `host`:`port` and resolves once connected (rejects when refused). */
export const rawSocket = (port: number, host = '127.0.0.1'): Promise<RawSocket> =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect({ port, host });
    const chunks: Buffer[] = [];
    let open = true;
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise<number>((done) =>
      socket.once('close', () => {
        open = false;
        done(performance.now() - started);
      }),
    );
    socket.once('error', reject); // before connect: refused; after, the close above tells
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      socket.on('error', () => undefined);
      resolve({ socket, received: () => Buffer.concat(chunks).toString('latin1'), closed, open: () => open });
    });
  });

/** A GET request head as a client writes it. */
export const getHead = (path: string, headers = ''): string =>
  `GET ${path} HTTP/1.1\r\nHost: test\r\n${headers}\r\n`;

/** The file descriptors this process holds now (`/proc/self/fd`). */
export const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

/** What a client that sends its whole request before reading got: every byte of the answer, and how it failed. */
export interface WholeExchange {
  readonly received: string;
  /** The socket's error (`EPIPE`, `ECONNRESET`: the server reset the connection), if any. */
  readonly error?: string;
}

/**
 * Writes `head` and `body` to 127.0.0.1:`port` as fast as the connection takes them, as a client does that reads
 * the answer only once its request is out (Python's http.client), and resolves once the server closed the
 * connection.
 */
export const sendWhole = (port: number, head: string, body: Buffer): Promise<WholeExchange> =>
  new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (failure: NodeJS.ErrnoException) => (error ??= failure.code ?? failure.message));
    socket.on('close', () =>
      resolve({
        received: Buffer.concat(chunks).toString('latin1'),
        ...(error !== undefined ? { error } : {}),
      }),
    );
    socket.write(head);
    socket.write(body);
  });
