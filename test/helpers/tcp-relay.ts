/**
 * startTcpRelay: a TCP relay on 127.0.0.1 in front of one server, whatever the protocol (http, TLS): it can slow
 * what the server sends back, count it, and drop every connection at once (a network cut).
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { PassThrough, Transform } from 'node:stream';

/** A running relay. */
export interface TcpRelay {
  /** The port to connect to instead of the server's. */
  readonly port: number;
  /** Bytes the server has sent back through the relay so far, over every connection. */
  readonly bytesFromServer: number;
  /** Destroys every connection open now, both sides: the client sees a reset mid-way. */
  dropAll(): void;
  close(): Promise<void>;
}

/** How slow: at most `bytesPerTick` of the server's bytes every `tickMs`, per connection. */
export interface ThrottleOptions {
  readonly bytesPerTick: number;
  readonly tickMs: number;
}

/** What the relay does besides relaying. */
export interface TcpRelayOptions {
  /** Send the server's bytes at this pace (default: as fast as they come). */
  readonly throttle?: ThrottleOptions;
  /** Called with `bytesFromServer` after each chunk from the server (e.g. to `dropAll` at some point). */
  readonly onServerBytes?: (total: number, relay: TcpRelay) => void;
}

/** Passes chunks on in slices of `bytesPerTick`, one slice per `tickMs`. */
const throttled = ({ bytesPerTick, tickMs }: ThrottleOptions): Transform =>
  new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let at = 0;
      const next = (): void => {
        if (at >= chunk.length) return done();
        this.push(chunk.subarray(at, at + bytesPerTick));
        at += bytesPerTick;
        setTimeout(next, tickMs).unref();
      };
      next();
    },
  });

/**
 * Relays every connection to `127.0.0.1:<targetPort>` byte for byte: what the client sends goes at once, what the
 * server answers as `options` say. TLS passes through untouched (the host name stays 127.0.0.1).
 */
export const startTcpRelay = async (targetPort: number, options: TcpRelayOptions = {}): Promise<TcpRelay> => {
  const sockets = new Set<Socket>();
  let bytesFromServer = 0;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    track(client);
    track(upstream);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    upstream.on('data', (chunk: Buffer) => {
      bytesFromServer += chunk.length;
      options.onServerBytes?.(bytesFromServer, relay);
    });
    client.pipe(upstream);
    upstream.pipe(options.throttle ? throttled(options.throttle) : new PassThrough()).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const dropAll = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  const relay: TcpRelay = {
    port: (server.address() as AddressInfo).port,
    get bytesFromServer() {
      return bytesFromServer;
    },
    dropAll,
    close: () =>
      new Promise<void>((resolve) => {
        dropAll();
        server.close(() => resolve());
      }),
  };
  return relay;
};
