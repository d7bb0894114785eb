/** startTorchServeStandIn: a TorchServe management API stand-in (register, unregister, list, token check) for tests. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startHttpServer } from './http-server';
import { endableDelays } from './wait';

/** A request the stand-in received. */
export interface TorchServeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly authorization: string | undefined;
}

/** The running stand-in. */
export interface TorchServeStandIn {
  readonly url: string;
  close(): Promise<void>;
  /** Registered model names (live). */
  readonly registered: Set<string>;
  readonly requests: ReadonlyArray<TorchServeRequest>;
  /** The management key requests must carry (`Authorization: Bearer <key>`); undefined = token auth disabled. */
  token: string | undefined;
  /** Makes the next `n` requests on the route fail with `status` and TorchServe's error body. */
  failNext(method: 'POST' | 'DELETE' | 'GET', n: number, status: number, message?: string): void;
  /** Registers without a request. */
  preload(...names: string[]): void;
  /** How long each register takes. */
  registerDelayMs: number;
}

/** Starts the stand-in on 127.0.0.1 with a free port; `pageToken` paging like TorchServe's `GET /models`. */
export const startTorchServeStandIn = async (): Promise<TorchServeStandIn> => {
  const registered = new Set<string>();
  const requests: TorchServeRequest[] = [];
  const failures = new Map<string, { remaining: number; status: number; message: string }>();
  // Registers still waiting out their delay; close() cuts them short so no timer outlives the test.
  const delays = endableDelays();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const authorization = req.headers.authorization;
    requests.push({ method, path: url.pathname, query: url.searchParams, authorization });
    for await (const _chunk of req) {
      // TorchServe takes register arguments from the query; a body is drained and ignored.
    }
    if (standIn.token !== undefined && authorization !== `Bearer ${standIn.token}`) {
      // What TorchServe really answers for a missing or wrong key (TokenAuthorizationHandler -> 400).
      return error(
        res,
        400,
        'InvalidKeyException',
        'Token Authorization failed. Token either incorrect, expired, or not provided correctly',
      );
    }
    const failure = failures.get(method);
    if (failure !== undefined && failure.remaining > 0) {
      failure.remaining -= 1;
      return error(res, failure.status, 'InjectedFailure', failure.message);
    }
    const segments = url.pathname.split('/').filter((s) => s !== '');
    if (segments[0] !== 'models' || segments.length > 2)
      return error(
        res,
        404,
        'ResourceNotFoundException',
        'Requested resource is not found, please refer to API document.',
      );
    const name = segments[1] === undefined ? undefined : decodeURIComponent(segments[1]);

    if (name === undefined && method === 'GET') {
      const limit = Number(url.searchParams.get('limit') ?? '100');
      const start = Number(url.searchParams.get('next_page_token') ?? '0');
      const names = [...registered].sort();
      const page = names.slice(start, start + limit);
      const body: Record<string, unknown> = {
        models: page.map((modelName) => ({ modelName, modelUrl: modelName })),
      };
      if (start + limit < names.length) body['nextPageToken'] = String(start + limit);
      return json(res, 200, body);
    }
    if (name === undefined && method === 'POST') {
      const modelName = url.searchParams.get('model_name') ?? url.searchParams.get('url') ?? '';
      if (url.searchParams.get('url') === null)
        return error(res, 400, 'BadRequestException', 'Parameter url is required.');
      if (registered.has(modelName)) {
        return error(
          res,
          409,
          'ConflictStatusException',
          `Model version 1.0 is already registered for model ${modelName}`,
        );
      }
      await delays.delay(standIn.registerDelayMs);
      registered.add(modelName);
      return json(res, 200, {
        status: `Model "${modelName}" Version: 1.0 registered with 1 initial workers`,
      });
    }
    if (name !== undefined && method === 'DELETE') {
      if (!registered.delete(name))
        return error(res, 404, 'ModelNotFoundException', `Model not found: ${name}`);
      return json(res, 200, { status: `Model "${name}" unregistered` });
    }
    return error(
      res,
      405,
      'MethodNotAllowedException',
      'Requested method is not allowed, please refer to API document.',
    );
  };

  const server = await startHttpServer((req, res) => handle(req, res).catch(() => void res.destroy()));

  const standIn: TorchServeStandIn = {
    url: server.url,
    close: () => {
      delays.endAll();
      return server.close();
    },
    registered,
    requests,
    token: undefined,
    registerDelayMs: 0,
    failNext: (method, n, status, message = `injected failure ${status}`) => {
      failures.set(method, { remaining: n, status, message });
    },
    preload: (...names) => {
      for (const name of names) registered.add(name);
    },
  };
  return standIn;
};

const json = (res: ServerResponse, status: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
};

// TorchServe's ErrorResponse shape (NettyUtils.sendError).
const error = (res: ServerResponse, code: number, type: string, message: string): void =>
  json(res, code, { code, type, message });
