/** The HTTP surface: /healthz, /readyz, /metrics, /status, answered from memory, redacted, bounded for the probes. */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Observable } from 'rxjs';
import type { ModelPhase } from '../core/model-status';
import { redact } from '../core/redact';
import { shownPhases, type ModelStatusJson, type StatusQuery } from '../core/status-document';
import { announcesBody, boundedServer, defaultServerLimits, endAnswer, type ServerLimits } from '../net';
import { classifyAgentPortRequest } from './agent-port-handler';
import { afterName } from './page-cursor';
import type { SurfaceState } from './surface-state';

/** The paths the surface serves (`/status/<model>` for one model). */
export const surfacePaths = {
  healthz: '/healthz',
  readyz: '/readyz',
  metrics: '/metrics',
  status: '/status',
} as const;

const statusPrefix = `${surfacePaths.status}/`;
const ownPaths: ReadonlySet<string> = new Set(Object.values(surfacePaths));

/** What the surface reads: all of it from memory, none of it from the model server. */
export interface SurfaceView extends Pick<SurfaceState, 'liveness' | 'ready'> {
  /** One page of the /status document as JSON text (see `statusDocumentText`). */
  readonly statusPage: (query: StatusQuery) => string;
  readonly modelStatus: (model: string) => ModelStatusJson | undefined;
  /** The Prometheus text page and its content type. */
  readonly metrics: () => Promise<{ readonly contentType: string; readonly text: string }>;
}

/** The surface's bounds: the server's, and what one request may cost. */
export interface SurfaceLimits extends ServerLimits {
  /** Models on one /status page: the default and the most `?limit=` may ask. */
  readonly statusPageSize: number;
  /** /status and /metrics answers in flight at once; more get 503 with Retry-After. The probes are never held. */
  readonly maxHeavyRequests: number;
}

/** The surface's bounds unless flags say otherwise. */
export const defaultSurfaceLimits: SurfaceLimits = {
  ...defaultServerLimits,
  statusPageSize: 500,
  maxHeavyRequests: 4,
};

/** Where and how the surface listens. */
export interface HttpSurfaceOptions {
  readonly port: number;
  /** The address to bind; default every interface (probes come to the pod IP). */
  readonly host?: string;
  readonly limits?: SurfaceLimits;
  readonly view: SurfaceView;
  readonly log: Logger;
  /** KServe's agent port: takes every request to a path not the surface's own (else a 404), and its readiness check. */
  readonly agentPort?: RequestListener;
}

/** The surface's own paths: the same with or without the agent port (docs/kserve.md). */
export const isSurfacePath = (pathname: string): boolean =>
  ownPaths.has(pathname) || pathname.startsWith(statusPrefix);

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

const jsonType = 'application/json; charset=utf-8';

const json = (status: number, value: unknown, headers?: Answer['headers']): Answer => ({
  status,
  contentType: jsonType,
  body: JSON.stringify(value),
  ...(headers !== undefined ? { headers } : {}),
});

const phaseNames: ReadonlySet<string> = new Set(shownPhases);

const modelFromPath = (path: string): string | undefined => {
  try {
    return decodeURIComponent(path.slice(statusPrefix.length));
  } catch {
    return undefined; // a malformed escape names no model
  }
};

/** `?limit=&after=&phase=` of /status, the limit at most `pageSize`; a string saying what is wrong otherwise. */
const statusQuery = (search: URLSearchParams, pageSize: number): StatusQuery | string => {
  const limitText = search.get('limit');
  const limit = limitText === null ? pageSize : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1) return `limit must be a whole number from 1 to ${pageSize}`;
  const cursor = search.get('after');
  const after = cursor === null ? null : afterName(cursor);
  if (after === undefined) return 'after must be a model name or a page.next of this process (start again)';
  const phase = search.get('phase');
  if (phase !== null && !phaseNames.has(phase)) return `phase must be one of ${shownPhases.join(', ')}`;
  return {
    limit: Math.min(limit, pageSize),
    ...(after !== null ? { after } : {}),
    ...(phase !== null ? { phase: phase as ModelPhase } : {}),
  };
};

/** The answer to `GET url`. */
const answer = async (url: URL, view: SurfaceView, limits: SurfaceLimits): Promise<Answer> => {
  switch (url.pathname) {
    case surfacePaths.healthz: {
      const liveness = view.liveness();
      return json(liveness.ok ? 200 : 503, { status: liveness.ok ? 'ok' : 'stalled', ...liveness });
    }
    case surfacePaths.readyz: {
      const ready = view.ready();
      return json(ready ? 200 : 503, { status: ready ? 'ready' : 'starting', ready });
    }
    case surfacePaths.metrics: {
      const { contentType, text } = await view.metrics();
      return { status: 200, contentType, body: text };
    }
    case surfacePaths.status: {
      const query = statusQuery(url.searchParams, limits.statusPageSize);
      if (typeof query === 'string') return json(400, { error: query });
      return { status: 200, contentType: jsonType, body: view.statusPage(query) };
    }
  }
  const model = url.pathname.startsWith(statusPrefix) ? modelFromPath(url.pathname) : undefined;
  const status = model === undefined ? undefined : view.modelStatus(model);
  if (status !== undefined) return json(200, status);
  return json(404, { error: model === undefined ? 'no such path' : 'no such model' });
};

/** The heavy answers: their cost grows with the models, so only a few are made at once. */
const heavyPaths: ReadonlySet<string> = new Set([surfacePaths.status, surfacePaths.metrics]);
const busy = json(
  503,
  { error: 'busy: too many /status and /metrics answers in flight' },
  { 'retry-after': '1' },
);

/** The path of a request target (`/a/b` of `/a/b?c`), as sent: no decoding, no dot segments resolved. */
const pathOf = (target: string | undefined): string => {
  const path = (target ?? '/').split('?', 1)[0]!;
  if (path.startsWith('/')) return path;
  try {
    return new URL(path).pathname; // an absolute-form target (`GET http://host/path`)
  } catch {
    return path; // `*`, or nothing a URL can be made of: not one of the surface's paths
  }
};

/**
 * A request the agent port takes: any not to the surface's own paths, and KServe's readiness check on whatever path
 * (the webhook probes the agent on the user container's readiness path, maybe `/healthz`, where our liveness would
 * say nothing of the model server).
 */
const forAgentPort = (request: IncomingMessage): boolean =>
  !isSurfacePath(pathOf(request.url)) || classifyAgentPortRequest(request.headers).kind === 'readiness';

/** A request answered here, from memory (not proxied): only these may use the reserved connections. */
const answeredHere = (request: IncomingMessage, agentPort: boolean): boolean =>
  !agentPort ||
  isSurfacePath(pathOf(request.url)) ||
  classifyAgentPortRequest(request.headers).kind !== 'proxy';

/** The same page text to many clients is redacted once (a /status page is hundreds of kB). */
const redactedTexts = (size: number): ((text: string) => string) => {
  const known = new Map<string, string>();
  return (text) => {
    const hit = known.get(text);
    if (hit !== undefined) return hit;
    const shown = redact(text);
    if (known.size === size) known.delete(known.keys().next().value!);
    known.set(text, shown);
    return shown;
  };
};

/** The surface's request handler: every answer through `redact`, heavy answers a few at a time. */
const responder = (view: SurfaceView, limits: SurfaceLimits, agentPort?: RequestListener) => {
  const redactBody = redactedTexts(8);
  let heavyInFlight = 0;
  return (request: IncomingMessage, response: ServerResponse): void => {
    if (agentPort !== undefined && forAgentPort(request)) return void agentPort(request, response);
    const head = request.method === 'HEAD';
    const reply = (result: Answer, close = false): void => {
      const body = redactBody(result.body); // the one gate: nothing leaves without redaction
      response.writeHead(result.status, {
        ...result.headers,
        'content-type': result.contentType,
        'content-length': Buffer.byteLength(body),
        'cache-control': 'no-store',
        ...(close ? { connection: 'close' } : {}),
      });
      endAnswer(request, response, head ? undefined : body);
    };
    // Neither a method with a body nor a GET with one is read: answered at once, the connection closed after it
    // (once the body stopped coming, for a moment: a client still sending would see a reset, not the answer).
    if (request.method !== 'GET' && !head)
      return reply(json(405, { error: 'only GET and HEAD' }, { allow: 'GET, HEAD' }), true);
    if (announcesBody(request)) return reply(json(413, { error: 'the surface takes no request body' }), true);
    // A target no URL can be made of (`//`, `//[`) names none of the surface's paths.
    const url = URL.parse(request.url ?? '/', 'http://surface');
    if (url === null) return reply(json(404, { error: 'no such path' }));
    if (heavyPaths.has(url.pathname)) {
      if (heavyInFlight >= limits.maxHeavyRequests) return reply(busy);
      heavyInFlight++;
      response.once('close', () => heavyInFlight--);
    }
    answer(url, view, limits).then(reply, (error: unknown) => {
      reply(json(500, { error: 'the surface failed to answer', reason: String(error) }));
    });
  };
};

/**
 * Serves the surface while subscribed: emits the address once listening, errors when the port cannot be bound,
 * closes the server and every connection on unsubscribe. A failed accept once listening (EMFILE) is logged at most
 * once a second, and the surface goes on: liveness says what is wrong.
 */
export const httpSurface = ({
  port,
  host,
  limits = defaultSurfaceLimits,
  view,
  log,
  agentPort,
}: HttpSurfaceOptions): Observable<AddressInfo> =>
  new Observable<AddressInfo>((subscriber) => {
    const server = boundedServer(limits, responder(view, limits, agentPort), (request) =>
      answeredHere(request, agentPort !== undefined),
    );
    let listening = false;
    let loggedAt = -Infinity;
    server.on('error', (error: NodeJS.ErrnoException) => {
      if (!listening) return subscriber.error(error);
      // On a clock NTP never steps: set back an hour, the wall clock would keep the warn silent for that hour.
      if (performance.now() - loggedAt < 1000) return;
      loggedAt = performance.now();
      log.warn({ err: error, code: error.code }, 'HTTP surface cannot accept a connection');
    });
    server.listen({ port, ...(host !== undefined ? { host } : {}) }, () => {
      listening = true;
      const address = server.address() as AddressInfo;
      log.info({ port: address.port, host: address.address }, 'HTTP surface listening');
      subscriber.next(address);
    });
    return () => {
      server.close();
      server.closeAllConnections();
    };
  });
