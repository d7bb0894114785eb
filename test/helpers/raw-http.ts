/** Storage that misbehaves on purpose: exact bytes node:http will not write (rawReply), bodies that trickle (trickle). */
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

/**
 * Answers 200 announcing `times` chunks of `chunk` and sends one every `everyMs` ms (a trickle), ending when all
 * are sent; stops when the client goes away.
 */
export const trickle =
  (chunk: Buffer, everyMs: number, times: number): HttpHandler =>
  (_req, res) => {
    res.writeHead(200, {
      'content-length': chunk.length * times,
      'content-type': 'application/octet-stream',
    });
    let sent = 0;
    const timer = setInterval(() => {
      if (sent === times) {
        clearInterval(timer);
        res.end();
        return;
      }
      sent += 1;
      res.write(chunk);
    }, everyMs);
    res.on('close', () => clearInterval(timer));
  };
