/** The reverse proxy's test bench: a real upstream (node:http) and the proxy behind boundedServer, both on 127.0.0.1. */
import { execFile } from 'node:child_process';
import {
  createServer,
  request,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
} from 'node:http';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { promisify } from 'node:util';
import pino from 'pino';
import type { BodyPace } from '../../src/net/body-pace';
import { boundedServer, defaultServerLimits, type ServerLimits } from '../../src/net/bounded-server';
import { reverseProxy, type ReverseProxy } from '../../src/net/reverse-proxy';
import type { HttpHandler } from '../../src/testing/http-server';
import { LogSink } from '../helpers/log-sink';

/** A server listening on 127.0.0.1 that drops every connection when closed. */
interface Listening {
  readonly port: number;
  readonly close: () => Promise<void>;
}

const listen = async (server: Server): Promise<Listening> => {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
};

/** What the upstream saw of one request. */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: ReadonlyArray<string>;
  readonly request: IncomingMessage;
}

/** The model server stand-in: answers with the test's handler, records requests and counts connections. */
export interface Upstream extends Listening {
  readonly seen: SeenRequest[];
  readonly connections: () => number;
  handler: HttpHandler;
}

export const startUpstream = async (handler: HttpHandler): Promise<Upstream> => {
  let connections = 0;
  const seen: SeenRequest[] = [];
  const server = createServer();
  server.keepAliveTimeout = 30_000;
  const upstream = { seen, connections: () => connections, handler } as Upstream;
  server.on('connection', () => connections++);
  server.on('request', (req: IncomingMessage, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, request: req });
    void upstream.handler(req, res);
  });
  return Object.assign(upstream, await listen(server));
};

/** A port on 127.0.0.1 where nothing listens. */
export const closedPort = async (): Promise<number> => {
  const probe = await listen(createServer());
  await probe.close();
  return probe.port;
};

/** The proxy as production mounts it, and what it logged. */
export interface ProxyBench extends Listening {
  readonly proxy: ReverseProxy;
  readonly server: Server;
  readonly log: LogSink;
}

export const startProxy = async (
  port: number,
  {
    timeoutMs = 2000,
    maxSockets = 8,
    body = { stallMs: 2000, minRate: 1024 },
    limits = {},
    now,
  }: {
    timeoutMs?: number;
    maxSockets?: number;
    body?: BodyPace;
    limits?: Partial<ServerLimits>;
    /** The proxy's clock for its warn lines (default: the real one). */
    now?: () => number;
  } = {},
): Promise<ProxyBench> => {
  const log = new LogSink();
  const proxy = reverseProxy({
    target: { host: '127.0.0.1', port },
    maxSockets,
    timeoutMs,
    body,
    log: pino({ level: 'debug' }, log),
    ...(now !== undefined ? { now } : {}),
  });
  const server = boundedServer(
    { ...defaultServerLimits, maxHeaderBytes: 32 * 1024, maxHeadersCount: 256, ...limits },
    (req, res) => proxy.handle(req, res),
  );
  const listening = await listen(server);
  return {
    ...listening,
    proxy,
    server,
    log,
    close: async () => {
      await listening.close();
      proxy.close();
    },
  };
};

/** One answer as the client got it. */
export interface Answer {
  readonly status: number;
  readonly statusMessage: string;
  readonly rawHeaders: ReadonlyArray<string>;
  readonly rawTrailers: ReadonlyArray<string>;
  readonly body: Buffer;
  /** Whether the body arrived whole (false: the connection was cut mid-body). */
  readonly complete: boolean;
}

/** What `send` writes: the request's parts; `body` chunks are written one by one (no length: chunked). */
export interface Sent {
  readonly method?: string;
  readonly path?: string;
  readonly headers?: OutgoingHttpHeaders | string[];
  readonly body?: Buffer | ReadonlyArray<Buffer>;
}

/** Sends one request to 127.0.0.1:`port` on a connection of its own and resolves with the answer. */
export const send = (port: number, sent: Sent = {}): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const client = request(
      {
        host: '127.0.0.1',
        port,
        agent: false, // a connection of its own, closed after the answer: nothing left open
        method: sent.method ?? 'GET',
        path: sent.path ?? '/',
        headers: sent.headers,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', () => undefined);
        response.on('close', () =>
          resolve({
            status: response.statusCode ?? 0,
            statusMessage: response.statusMessage ?? '',
            rawHeaders: response.rawHeaders,
            rawTrailers: response.rawTrailers,
            body: Buffer.concat(chunks),
            complete: response.complete,
          }),
        );
      },
    );
    client.on('error', reject);
    const { body } = sent;
    if (body === undefined || Buffer.isBuffer(body)) client.end(body);
    else {
      for (const chunk of body) client.write(chunk);
      client.end();
    }
  });

/** The values of header `name` (any case) in a raw list. */
export const valuesOf = (raw: ReadonlyArray<string>, name: string): string[] =>
  raw.flatMap((value, i) => (i % 2 === 0 && value.toLowerCase() === name.toLowerCase() ? [raw[i + 1]!] : []));

/** The names in a raw list, in order, as sent. */
export const namesOf = (raw: ReadonlyArray<string>): string[] => raw.filter((_value, i) => i % 2 === 0);

/**
 * POSTs `bytes` zero bytes to 127.0.0.1:`port` from a node process of its own, which goes on sending while this one
 * does not run; resolves with the status and body it got.
 */
export const postFromAnotherProcess = async (
  port: number,
  bytes: number,
): Promise<{ readonly status: number; readonly body: string }> => {
  const script = `
    const request = require('node:http').request(
      { host: '127.0.0.1', port: ${port}, method: 'POST', path: '/', agent: false },
      (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk) => (body += chunk));
        response.on('end', () => process.stdout.write(JSON.stringify({ status: response.statusCode, body })));
      },
    );
    request.on('error', (error) => process.stdout.write(JSON.stringify({ status: 0, body: error.message })));
    request.end(Buffer.alloc(${bytes}));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { timeout: 60_000 });
  return JSON.parse(stdout) as { status: number; body: string };
};

/** What a test opened: a model server stand-in, a raw TCP one, the proxy in front. */
export interface ProxyPeers {
  upstream?: Upstream;
  raw?: NetServer;
  bench?: ProxyBench;
}

/** Closes what a test opened of `peers` and forgets it (a file's afterEach). */
export const closePeers = async (peers: ProxyPeers): Promise<void> => {
  await peers.bench?.close();
  await peers.upstream?.close();
  const { raw } = peers;
  await new Promise((resolve) => (raw ? raw.close(resolve) : resolve(undefined)));
  peers.bench = peers.upstream = peers.raw = undefined;
};
