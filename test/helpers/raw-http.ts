/** rawReply: an HTTP handler that writes exact bytes to the socket, for responses node:http will not make. */
import type { HttpHandler } from '../../src/testing/http-server';

/**
 * Answers with `head` (a status line and header lines, `\n`-separated; the blank line is added) and `body`,
 * written as they are, then closes the connection: a close-delimited body when `head` has neither
 * Content-Length nor chunked encoding, a body shorter than its Content-Length, a chunked body without its
 * terminator. With `close: false` the connection stays open after the bytes (a server that stalls).
 */
export const rawReply =
  (head: string, body: Buffer | string = '', { close = true }: { close?: boolean } = {}): HttpHandler =>
  (_req, res) => {
    const socket = res.socket!;
    socket.write(
      Buffer.concat([Buffer.from(`${head.trim().split('\n').join('\r\n')}\r\n\r\n`), Buffer.from(body)]),
    );
    if (close) socket.end();
  };
