/** startThrottleProxy: a TCP relay on 127.0.0.1 that slows what a server sends back, whatever the protocol (http, TLS). */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Transform } from 'node:stream';

/** A running relay. */
export interface ThrottleProxy {
  /** The port to connect to instead of the server's. */
  readonly port: number;
  close(): Promise<void>;
}

/** How slow: at most `bytesPerTick` of the server's bytes every `tickMs`, per connection. */
export interface ThrottleOptions {
  readonly bytesPerTick: number;
  readonly tickMs: number;
}

/** Passes chunks on in slices of `bytesPerTick`, one slice per `tickMs`. */
const throttle = ({ bytesPerTick, tickMs }: ThrottleOptions): Transform =>
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
 * server answers goes at the pace of `options`. TLS passes through untouched (the host name stays 127.0.0.1).
 */
export const startThrottleProxy = async (
  targetPort: number,
  options: ThrottleOptions,
): Promise<ThrottleProxy> => {
  const sockets = new Set<Socket>();
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
    client.pipe(upstream);
    upstream.pipe(throttle(options)).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
};
