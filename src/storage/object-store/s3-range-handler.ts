/**
 * s3RequestHandler: the AWS SDK's request handler with ranged GetObjects sent by undici, so a part takes their bodies'
 * chunks as they come off the socket (FlowingBody); every other request goes by the SDK's own node:http handler.
 */
import type { Agent } from 'node:http';
import type { NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpRequest as SdkRequest, HttpResponse } from '@smithy/types';
import { request as undiciRequest, type Dispatcher } from '../../net';
import { lazyModule } from '../../core/lazy-module';
import { answerWithin } from '../../net';

/* eslint-disable @typescript-eslint/no-require-imports -- loaded with the SDK, at the first s3:// model */
const smithyHttp = lazyModule(
  () => require('@smithy/node-http-handler') as typeof import('@smithy/node-http-handler'),
);
const smithyProtocols = (): typeof import('@smithy/core/protocols') =>
  require('@smithy/core/protocols') as typeof import('@smithy/core/protocols');
/* eslint-enable @typescript-eslint/no-require-imports */

/** How the SDK's requests are sent. */
export interface S3HandlerSettings {
  /**
   * The agent for http and https requests (proxy, CA, keep-alive: `src/net/network.ts`), asked for when the handler
   * is made (at the first S3 request: a node agent loads node:https); absent: the SDK's own.
   */
  readonly agent?: () => Agent;
  /** Longest wait for a connection (default 30 s). */
  readonly connectTimeoutMs?: number;
  /** Longest wait for the next bytes of an answer (default 60 s). */
  readonly idleTimeoutMs?: number;
  /**
   * The undici dispatcher for a request to `url` (`Network.dispatcherFor`): ranged GetObjects go by it, a part taking
   * their chunks as they come (FlowingBody); absent (or undefined for a URL), requests go by the SDK's handler.
   */
  readonly dispatcherFor?: (url: URL) => Dispatcher | undefined;
}

type HttpRequest = Parameters<NodeHttpHandler['handle']>[0];
type HandlerOptions = Parameters<NodeHttpHandler['handle']>[1];
type Handled = Awaited<ReturnType<NodeHttpHandler['handle']>>;

/** The URL a signed SDK request goes to (its query in the SDK's own encoding). */
export const urlOf = (request: SdkRequest): URL => {
  const query = request.query !== undefined ? smithyProtocols().buildQueryString(request.query) : '';
  const port = request.port !== undefined ? `:${request.port}` : '';
  return new URL(
    `${request.protocol}//${request.hostname}${port}${request.path}${query !== '' ? `?${query}` : ''}`,
  );
};

/** `headers` as the SDK reads them: one string per name. */
const flat = (headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return out;
};

/**
 * The SDK's node:http handler on the settings' agent, with a GET that has a `Range` and no body sent by undici when
 * `dispatcherFor` has a dispatcher for its URL: its response's body is undici's (a Readable, as the SDK wants), and
 * the SDK signs, retries and reads errors as it always does.
 */
export const s3RequestHandler = (settings: S3HandlerSettings): NodeHttpHandler => {
  const { agent, connectTimeoutMs = 30_000, idleTimeoutMs = 60_000, dispatcherFor } = settings;
  const nodeAgent = agent?.();
  const inner = new (smithyHttp().NodeHttpHandler)({
    connectionTimeout: connectTimeoutMs,
    socketTimeout: idleTimeoutMs,
    ...(nodeAgent !== undefined ? { httpAgent: nodeAgent, httpsAgent: nodeAgent } : {}),
  });
  const handle = inner.handle.bind(inner);
  const route = async (request: HttpRequest, options: HandlerOptions): Promise<Handled> => {
    const ranged =
      request.method === 'GET' &&
      request.body === undefined &&
      Object.keys(request.headers).some((name) => name.toLowerCase() === 'range');
    const url = ranged ? urlOf(request) : undefined;
    const dispatcher = url === undefined ? undefined : dispatcherFor?.(url);
    if (url === undefined || dispatcher === undefined) return handle(request, options);
    const response = await undiciRequest(url, {
      method: 'GET',
      headers: request.headers,
      signal: options?.abortSignal as AbortSignal,
      headersTimeout: connectTimeoutMs,
      bodyTimeout: idleTimeoutMs,
      dispatcher,
    });
    // undici fails a body destroyed before its end (RequestAbortedError): as the SDK's own bodies, one dropped unread
    // (a changed object's) must not take the process down; its readers hear its failures as ever.
    response.body.on('error', () => undefined);
    const { HttpResponse: Response } = smithyProtocols();
    const answer: HttpResponse = new Response({
      statusCode: response.statusCode,
      headers: flat(response.headers),
      body: response.body,
    });
    return { response: answer };
  };
  // Every request's answer within the connect timeout, from its sending (answerWithin: a dripped head, 1xx without
  // end); node:http's socket timeout alone restarts with every byte.
  inner.handle = (request: HttpRequest, options: HandlerOptions = {}): Promise<Handled> =>
    answerWithin(connectTimeoutMs, options.abortSignal, (abortSignal) =>
      route(request, { ...options, abortSignal }),
    );
  return inner;
};
