/** Test servers that cannot outlive their test: started with startHttpServer, all closed after each test. */
import {
  startHttpServer,
  type HttpHandler,
  type HttpServerOptions,
  type RunningHttpServer,
} from '../../src/testing/http-server';

/** For a test file or describe block: returns `serve(handler, options?)`, whose servers are closed after each test. */
export const useHttpServers = (): ((
  handler: HttpHandler,
  options?: HttpServerOptions,
) => Promise<RunningHttpServer>) => {
  const open: RunningHttpServer[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((server) => server.close()));
  });
  return async (handler, options) => {
    const server = await startHttpServer(handler, options);
    open.push(server);
    return server;
  };
};

/** A free port on 127.0.0.1 that nothing listens on (connections to it are refused until someone does). */
export const closedPort = async (): Promise<number> => {
  const server = await startHttpServer(() => undefined);
  await server.close();
  return server.port;
};
