/** The HTTP surface: /healthz, /readyz, /metrics, /status on one port, answered from memory, every body redacted. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { Observable } from 'rxjs';
import { redact } from '../core/redact';
import type { ModelStatusJson } from '../core/status-document';
import type { Liveness } from './surface-state';

/** The paths the surface serves (`/status/<model>` for one model). */
export const surfacePaths = {
  healthz: '/healthz',
  readyz: '/readyz',
  metrics: '/metrics',
  status: '/status',
} as const;

/** What the surface reads: all of it from memory, none of it from the model server. */
export interface SurfaceView {
  readonly liveness: () => Liveness;
  readonly ready: () => boolean;
  /** The /status document as JSON text (see `statusDocumentText`). */
  readonly statusDocument: () => string;
  readonly modelStatus: (model: string) => ModelStatusJson | undefined;
  /** The Prometheus text page and its content type. */
  readonly metrics: () => Promise<{ readonly contentType: string; readonly text: string }>;
}

/** Where and how the surface listens. */
export interface HttpSurfaceOptions {
  readonly port: number;
  /** The address to bind; default every interface (probes come to the pod IP). */
  readonly host?: string;
  readonly view: SurfaceView;
  readonly log: Logger;
}

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

const jsonType = 'application/json; charset=utf-8';

const json = (status: number, value: unknown): Answer => ({
  status,
  contentType: jsonType,
  body: JSON.stringify(value),
});

const statusPrefix = `${surfacePaths.status}/`;

const modelFromPath = (path: string): string | undefined => {
  try {
    return decodeURIComponent(path.slice(statusPrefix.length));
  } catch {
    return undefined; // a malformed escape names no model
  }
};

/** The answer to `GET path`. */
const answer = async (path: string, view: SurfaceView): Promise<Answer> => {
  switch (path) {
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
    case surfacePaths.status:
      return { status: 200, contentType: jsonType, body: view.statusDocument() };
  }
  const model = path.startsWith(statusPrefix) ? modelFromPath(path) : undefined;
  const status = model === undefined ? undefined : view.modelStatus(model);
  if (status !== undefined) return json(200, status);
  return json(404, { error: model === undefined ? 'no such path' : 'no such model' });
};

const respond = (request: IncomingMessage, response: ServerResponse, view: SurfaceView): Promise<void> => {
  const path = (request.url ?? '/').split('?')[0]!;
  const head = request.method === 'HEAD';
  const reply = (result: Answer): void => {
    const body = redact(result.body); // the one gate: nothing leaves without redaction
    response.writeHead(result.status, {
      'content-type': result.contentType,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    });
    response.end(head ? undefined : body);
  };
  if (request.method !== 'GET' && !head) {
    response.setHeader('allow', 'GET, HEAD');
    reply(json(405, { error: 'only GET and HEAD' }));
    return Promise.resolve();
  }
  return answer(path, view).then(reply, (error: unknown) => {
    reply(json(500, { error: 'the surface failed to answer', reason: String(error) }));
  });
};

/**
 * Serves the surface while subscribed: emits the address once listening, errors when the port cannot be bound,
 * and closes the server (and its idle keep-alive connections) on unsubscribe.
 */
export const httpSurface = ({ port, host, view, log }: HttpSurfaceOptions): Observable<AddressInfo> =>
  new Observable<AddressInfo>((subscriber) => {
    const server = createServer((request, response) => void respond(request, response, view));
    server.requestTimeout = 10_000;
    server.headersTimeout = 5_000;
    server.keepAliveTimeout = 5_000;
    server.once('error', (error) => subscriber.error(error));
    server.listen({ port, ...(host !== undefined ? { host } : {}) }, () => {
      const address = server.address() as AddressInfo;
      log.info({ port: address.port }, 'HTTP surface listening');
      subscriber.next(address);
    });
    return () => {
      server.close();
      server.closeIdleConnections();
    };
  });
