/** startProxy: an HTTP proxy on 127.0.0.1 (CONNECT tunnels and absolute-URI forwarding) that records what it carried. */
import { createServer, request as httpRequest } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

/** One request the proxy carried: a tunnel (`CONNECT host:port`) or a forwarded request (`GET http://...`). */
export interface ProxiedRequest {
  readonly method: string;
  /** `host:port` for CONNECT, the absolute URL otherwise. */
  readonly target: string;
  /** The Proxy-Authorization header it came with, if any. */
  readonly authorization: string | undefined;
}

/** A running proxy. */
export interface TestProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: ReadonlyArray<ProxiedRequest>;
  close(): Promise<void>;
}

const hostPort = (target: string): { host: string; port: number } => {
  const at = target.lastIndexOf(':');
  return { host: target.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(target.slice(at + 1)) };
};

/**
 * Starts a proxy that tunnels CONNECT requests and forwards absolute-URI requests to wherever they ask (the tests
 * only ever ask for 127.0.0.1), recording each one. `requireAuth`: answer 407 unless Proxy-Authorization is it.
 */
export const startProxy = async (options: { readonly requireAuth?: string } = {}): Promise<TestProxy> => {
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const allowed = (authorization: string | undefined): boolean =>
    options.requireAuth === undefined || authorization === options.requireAuth;

  const server = createServer((req, res) => {
    const authorization = req.headers['proxy-authorization'];
    requests.push({ method: req.method ?? 'GET', target: req.url ?? '', authorization });
    if (!allowed(authorization)) return void res.writeHead(407).end();
    const target = new URL(req.url ?? '');
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: req.method,
        headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const authorization = req.headers['proxy-authorization'];
    requests.push({ method: 'CONNECT', target: req.url ?? '', authorization });
    if (!allowed(authorization)) return void client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
    const { host, port } = hostPort(req.url ?? '');
    const upstream = connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};
