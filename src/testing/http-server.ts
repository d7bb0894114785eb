/** startHttpServer: a node:http server on a free local port, for stand-ins and test servers, that closes cleanly. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lazyModule } from '../core/lazy-module';

// node:https (and node:tls with it, ~3.5 MiB of RSS) only for an https server: the benchmarks' proxies load this file.
/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first https server (lazy-module.ts) */
const nodeHttps = lazyModule(() => require('node:https') as typeof import('node:https'));

/**
 * Answers one request. What it returns is ignored, except a promise that rejects: that request is answered 500
 * with the error's text (or its connection dropped when the headers are out already).
 */
export type HttpHandler = (request: IncomingMessage, response: ServerResponse) => unknown;

/** Where to listen. */
export interface HttpServerOptions {
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Port; default 0 (any free port, see `port` and `url`). */
  readonly port?: number;
  /** Serve https with this key and certificate (PEM); default plain http. */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer };
}

/** A listening server. */
export interface RunningHttpServer {
  /** `http(s)://<host>:<port>`, the base URL to give a client (a wildcard host becomes a loopback address). */
  readonly url: string;
  /** The port it listens on (the free one picked when `options.port` was 0). */
  readonly port: number;
  /** Stops listening and drops every open connection, keep-alive and mid-response ones included. */
  close(): Promise<void>;
}

/** Starts `handler` on `options.host` (127.0.0.1) and `options.port` (a free one); rejects if it cannot listen. */
export const startHttpServer = async (
  handler: HttpHandler,
  options: HttpServerOptions = {},
): Promise<RunningHttpServer> => {
  const answer = (request: IncomingMessage, response: ServerResponse): void => {
    const fail = (cause: unknown): void => {
      if (response.headersSent) response.destroy();
      else response.writeHead(500, { 'Content-Type': 'text/plain' }).end(String(cause));
    };
    try {
      const answered: unknown = handler(request, response);
      if (answered instanceof Promise) answered.catch(fail);
    } catch (cause) {
      fail(cause);
    }
  };
  const server =
    options.tls === undefined ? createServer(answer) : nodeHttps().createServer(options.tls, answer);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://${urlHost(host)}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};

/**
 * Writes `bytes` bytes (a whole number of `block`s) of `block` repeated to `response` as fast as the client
 * drains them, then ends it: a large body (a model of gigabytes) without holding it in memory.
 */
export const writeRepeated = (response: ServerResponse, block: Buffer, bytes: number): void => {
  let sent = 0;
  const pump = (): void => {
    while (sent < bytes && !response.destroyed) {
      sent += block.length;
      if (!response.write(block)) {
        response.once('drain', pump);
        return;
      }
    }
    response.end();
  };
  pump();
};

// A wildcard address is not something a client can connect to; an IPv6 literal needs brackets in a URL.
const urlHost = (host: string): string => {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
};
