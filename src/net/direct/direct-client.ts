/** DirectClient: GET requests on DirectConnections, kept alive per origin, over TCP or TLS. */
import type { IncomingHttpHeaders } from 'node:http';
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import { DirectBody } from './direct-body';
import { DirectConnection, type ConnectionOwner } from './direct-connection';
import { DirectTimeout } from './direct-errors';

/** Whom a TLS connection trusts (the Network's CAs). */
export interface DirectTls {
  readonly ca?: ReadonlyArray<string>;
  readonly rejectUnauthorized: boolean;
}

/** One GET. */
export interface DirectRequest {
  readonly url: URL;
  /** Sent as they are (names and values are checked: no CR, LF or NUL); `host` is the URL's. */
  readonly headers: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
  /** Longest wait for the response head, connecting included. */
  readonly headersTimeoutMs: number;
  /** Longest wait for the next bytes of the body. */
  readonly idleTimeoutMs: number;
  /** Most bytes the body may bring when read as a stream (an error page); default no bound. */
  readonly maxStreamBytes?: number;
}

/** A response: its status and head, and its body (see DirectBody). */
export interface DirectResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: DirectBody;
}

/** How many idle connections are kept, and for how long (undici's default keep-alive is 4 s). */
export interface KeepAlive {
  readonly perOrigin: number;
  readonly idleMs: number;
}

const defaultKeepAlive: KeepAlive = { perOrigin: 16, idleMs: 4_000 };

/** A request header or value that could split the request: refused, as Node's own client does. */
const invalidHeader = (name: string): Error =>
  Object.assign(new TypeError(`invalid character in the header ${JSON.stringify(name.slice(0, 40))}`), {
    code: 'ERR_INVALID_CHAR',
  });

const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const headerValue = /^[\t\x20-\x7e\x80-\xff]*$/;

/** The request head of a GET of `url` with `headers`. */
export const requestHead = (url: URL, headers: Readonly<Record<string, string>>): string => {
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'host') continue;
    if (!headerName.test(name) || !headerValue.test(value)) throw invalidHeader(name);
    lines.push(`${name}: ${value}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
};

const originOf = (url: URL): string => `${url.protocol}//${url.host}`;

const portOf = (url: URL): number =>
  url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;

/** The host to connect to: an IPv6 literal without its brackets. */
const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Sends GETs on connections of its own, kept alive per origin (scheme, host, port): at most `keepAlive.perOrigin`
 * idle ones, each closed after `keepAlive.idleMs` unused. A kept-alive connection the server closed meanwhile
 * fails before any answer; the request is then sent once more on a new connection (a GET may be). TLS sessions are
 * resumed per origin.
 */
export class DirectClient implements ConnectionOwner {
  private readonly idle = new Map<string, Array<{ connection: DirectConnection; timer: NodeJS.Timeout }>>();
  private readonly sessions = new Map<string, Buffer>();
  private readonly origins = new WeakMap<DirectConnection, string>();
  private closed = false;

  constructor(
    private readonly tls: DirectTls,
    private readonly keepAlive: KeepAlive = defaultKeepAlive,
  ) {}

  /**
   * GETs `request.url` (http or https) and resolves with the response once its head is read, whatever its status.
   * Rejects on a connection that fails, a timeout (DirectTimeout), the signal, a malformed answer.
   */
  async get(request: DirectRequest): Promise<DirectResponse> {
    const head = requestHead(request.url, request.headers);
    const origin = originOf(request.url);
    const deadline = performance.now() + request.headersTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      // The retry goes on a new connection: another idle one may be as stale as the first.
      const reused = attempt === 0 ? this.takeIdle(origin) : undefined;
      const connection = reused ?? (await this.connect(request, origin, deadline));
      try {
        const answer = await connection.send(
          head,
          {
            headersTimeoutMs: Math.max(1, deadline - performance.now()),
            idleTimeoutMs: request.idleTimeoutMs,
          },
          request.signal,
        );
        return {
          status: answer.status,
          headers: answer.headers,
          body: new DirectBody(connection, request.maxStreamBytes),
        };
      } catch (cause) {
        const stale = reused !== undefined && !connection.sawResponse && !(cause instanceof DirectTimeout);
        if (stale && attempt === 0 && !request.signal.aborted) continue;
        throw cause;
      }
    }
  }

  /** Closes every idle connection; those in use close when their body ends. */
  close(): void {
    this.closed = true;
    for (const list of this.idle.values()) {
      for (const { connection, timer } of list) {
        clearTimeout(timer);
        connection.close();
      }
    }
    this.idle.clear();
  }

  /** A connection whose body was read whole: kept for the next request to its origin, or closed. */
  free(connection: DirectConnection): void {
    const origin = this.origins.get(connection);
    const list = origin === undefined ? undefined : (this.idle.get(origin) ?? []);
    if (
      this.closed ||
      origin === undefined ||
      list === undefined ||
      list.length >= this.keepAlive.perOrigin
    ) {
      connection.close();
      return;
    }
    const timer = setTimeout(() => {
      const at = list.findIndex((entry) => entry.connection === connection);
      if (at >= 0) list.splice(at, 1);
      connection.close();
    }, this.keepAlive.idleMs);
    timer.unref();
    connection.idle();
    list.push({ connection, timer });
    this.idle.set(origin, list);
  }

  private takeIdle(origin: string): DirectConnection | undefined {
    const list = this.idle.get(origin);
    for (let entry = list?.pop(); entry !== undefined; entry = list?.pop()) {
      clearTimeout(entry.timer);
      if (entry.connection.open) {
        entry.connection.busy();
        return entry.connection;
      }
    }
    return undefined;
  }

  private connect(request: DirectRequest, origin: string, deadline: number): Promise<DirectConnection> {
    const { url, signal } = request;
    const connection = new DirectConnection(this);
    this.origins.set(connection, origin);
    const host = hostOf(url);
    const port = portOf(url);
    const secure = url.protocol === 'https:';
    const session = this.sessions.get(origin);
    const options: ConnectionOptions = {
      host,
      port,
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(this.tls.ca !== undefined ? { ca: [...this.tls.ca] } : {}),
      rejectUnauthorized: this.tls.rejectUnauthorized,
      ALPNProtocols: ['http/1.1'],
      ...(session !== undefined ? { session } : {}),
    };
    const onread = { onread: connection.onread };
    const socket: Socket = secure
      ? connectTls({ ...options, ...onread } as ConnectionOptions)
      : connectTcp({ host, port, noDelay: true, ...onread });
    if (secure) socket.on('session', (ticket: Buffer) => this.sessions.set(origin, ticket));
    return new Promise<DirectConnection>((resolve, reject) => {
      const timer = setTimeout(
        () => fail(new DirectTimeout('MODELSYNC_CONNECT_TIMEOUT', request.headersTimeoutMs)),
        Math.max(1, deadline - performance.now()),
      );
      const fail = (cause: Error): void => {
        done();
        socket.destroy();
        reject(cause);
      };
      const onError = (cause: Error): void => fail(cause);
      const onAbort = (): void =>
        fail(
          signal.reason instanceof Error
            ? signal.reason
            : Object.assign(new Error('aborted'), { name: 'AbortError' }),
        );
      const connected = (): void => {
        done();
        socket.setNoDelay(true);
        connection.attach(socket);
        resolve(connection);
      };
      const done = (): void => {
        clearTimeout(timer);
        socket.off('error', onError);
        socket.off(secure ? 'secureConnect' : 'connect', connected);
        signal.removeEventListener('abort', onAbort);
      };
      socket.on('error', onError);
      socket.once(secure ? 'secureConnect' : 'connect', connected);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
    });
  }
}
