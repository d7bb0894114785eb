/** startV2ModelServer: a stand-in model server speaking the V2 repository API, for the demo, tests and CI. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { modelNameProblem } from '../core/model-name';
import { startHttpServer } from './http-server';
import { checkModelDir, type ModelDirCheck } from './model-manifest';
import { endableDelays } from './wait';
import { profiledRoutes } from './v2-profiled';
import { v2Profiles } from './v2-profiles';
import type {
  V2Fault,
  V2Load,
  V2ModelServerStandIn,
  V2ModelServerStandInOptions,
  V2Request,
  V2Route,
} from './v2-stand-in-api';

export type {
  V2Fault,
  V2Load,
  V2ModelServerStandIn,
  V2ModelServerStandInOptions,
  V2Request,
  V2Route,
} from './v2-stand-in-api';

const modelRoute = /^\/v2\/repository\/models\/([^/]+)\/(load|unload)$/;
const readyRoute = /^\/v2\/models\/([^/]+)\/ready$/;

/**
 * Starts a stand-in for Triton / MLServer / the KServe model server: `POST /v2/repository/index`,
 * `POST /v2/repository/models/{name}/load|unload`, `GET /v2/health/live|ready`, `GET /v2/models/{name}/ready`.
 * Loads answer 200 with an empty body like MLServer; errors are `{"error": "..."}`; unknown routes 404.
 */
export const startV2ModelServer = async (
  options: V2ModelServerStandInOptions = {},
): Promise<V2ModelServerStandIn> => {
  const { modelDir, unknownUnloadStatus = 404, profile = 'generic' } = options;
  const loaded = new Set<string>();
  // Names the server has heard of (loaded, failed, unloaded): the index lists them like a repository would.
  const known = new Set<string>();
  const reasons = new Map<string, string>();
  const requests: V2Request[] = [];
  const loads: V2Load[] = [];
  const delays = endableDelays();
  let loadDelayMs = options.loadDelayMs ?? 0;
  let failures = { remaining: 0, status: 503 };
  let inFlight = 0;
  let maxConcurrentLoads = 0;
  let closed = false;
  const faults = new Map<V2Route, { readonly fault: V2Fault; remaining: number }>();

  /** Plays the fault injected on `route`, if any is left: true when it has answered the request. */
  const playFault = async (route: V2Route, req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const injected = faults.get(route);
    if (injected === undefined || injected.remaining <= 0) return false;
    injected.remaining -= 1;
    const { fault } = injected;
    if ('reset' in fault) req.socket.destroy();
    else if ('hang' in fault) await delays.delay(2 ** 31 - 1);
    else res.writeHead(fault.status, { ...fault.headers }).end(fault.body ?? '');
    return true;
  };

  /** A real dir (a link is not followed) with a marker, or with exactly the files of `manifest` when given. */
  const check = async (name: string): Promise<ModelDirCheck> => {
    if (modelDir === undefined) return {};
    const dir = join(modelDir, name);
    if (options.manifest !== undefined) return checkModelDir(dir, options.manifest);
    try {
      if (!(await lstat(dir)).isDirectory()) return { problem: 'the model dir is not a directory' };
      const entries = await readdir(dir, { withFileTypes: true });
      return entries.some((e) => e.isFile() && e.name.startsWith('SUCCESS.')) ? {} : { problem: 'no marker' };
    } catch {
      return { problem: 'no model dir' };
    }
  };

  /** What a finished load records: the manifest's findings only when a manifest was given. */
  const finished = (name: string, status: number, atStart: ModelDirCheck, atEnd?: ModelDirCheck): V2Load => {
    const complete = atStart.problem === undefined && (atEnd === undefined || atEnd.problem === undefined);
    if (options.manifest === undefined) return { name, complete, status };
    const version = atEnd?.version ?? atStart.version;
    const problem = atStart.problem ?? atEnd?.problem;
    return {
      name,
      complete,
      status,
      ...(version === undefined ? {} : { version }),
      ...(problem === undefined ? {} : { problem }),
    };
  };

  const repositoryNames = async (): Promise<Set<string>> => {
    const names = new Set(known);
    for (const name of loaded) names.add(name);
    if (modelDir !== undefined) {
      const entries = await readdir(modelDir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) if (e.isDirectory() && !e.name.startsWith('.')) names.add(e.name);
    }
    return names;
  };

  const load = async (name: string, res: ServerResponse): Promise<void> => {
    inFlight += 1;
    maxConcurrentLoads = Math.max(maxConcurrentLoads, inFlight);
    try {
      const atStart = await check(name);
      await delays.delay(loadDelayMs);
      if (closed) return;
      known.add(name);
      if (failures.remaining > 0) {
        failures = { ...failures, remaining: failures.remaining - 1 };
        const error = `injected failure: load of '${name}' failed`;
        loads.push(finished(name, failures.status, atStart));
        reasons.set(name, error);
        return send(res, failures.status, { error });
      }
      const load = finished(
        name,
        200,
        atStart,
        atStart.problem === undefined ? await check(name) : undefined,
      );
      if (!load.complete) {
        // Like Triton: a failed reload leaves the version that was serving in place.
        const error = `failed to load '${name}': no model files`;
        loads.push({ ...load, status: 400 });
        reasons.set(name, error);
        return send(res, 400, { error });
      }
      loaded.add(name);
      reasons.delete(name);
      loads.push(load);
      send(res, 200);
    } finally {
      inFlight -= 1;
    }
  };

  const unload = (name: string, res: ServerResponse): void => {
    known.add(name);
    if (loaded.delete(name)) {
      reasons.set(name, 'unloaded');
      return send(res, 200);
    }
    if (unknownUnloadStatus === 200) return send(res, 200);
    send(res, 404, { error: `Model ${name} not found` });
  };

  const index = async (res: ServerResponse): Promise<void> => {
    const names = [...(await repositoryNames())].sort();
    send(
      res,
      200,
      names.map((name) => ({
        name,
        version: '1',
        state: loaded.has(name) ? 'READY' : 'UNAVAILABLE',
        reason: loaded.has(name) ? '' : (reasons.get(name) ?? ''),
      })),
    );
  };

  // A real server's answers, when the stand-in plays one (the generic routes below are its own reading).
  const profiled =
    profile === 'generic'
      ? undefined
      : profiledRoutes(v2Profiles[profile], {
          modelDir,
          loaded,
          loads,
          loadDelay: () => delays.delay(loadDelayMs),
          hang: () => delays.delay(2 ** 31 - 1),
          isClosed: () => closed,
        });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    // The raw path: Triton looks a name up as it was sent, the others decode it (the profile's nameOf).
    const path = (req.url ?? '/').split('?')[0]!;
    const match = modelRoute.exec(path) ?? readyRoute.exec(path);
    let name: string | undefined;
    if (match) {
      try {
        name = decodeURIComponent(match[1]!);
      } catch {
        name = match[1]!;
      }
    }
    const request: V2Request = { method, path, ...(name === undefined ? {} : { name }), at: Date.now() };
    requests.push(request);
    options.onRequest?.(request);
    const body = await readBody(req);
    const route = path === '/v2/repository/index' ? 'index' : (match?.[2] as V2Route | undefined);
    if (route !== undefined && method === 'POST' && (await playFault(route, req, res))) return;
    if (profiled !== undefined) return void (await profiled(req, res, path, body));
    if (body.trim() !== '' && !isJson(body)) {
      return send(res, 400, { error: 'failed to parse the request JSON buffer' });
    }
    if (name !== undefined) {
      const problem = modelNameProblem(name);
      if (problem !== undefined) return send(res, 400, { error: `invalid model name: ${problem}` });
    }

    if (method === 'POST' && path === '/v2/repository/index') return index(res);
    if (method === 'GET' && (path === '/v2/health/live' || path === '/v2/health/ready'))
      return send(res, 200);
    if (match && name !== undefined) {
      const action = match[2];
      if (method === 'POST' && action === 'load') return load(name, res);
      if (method === 'POST' && action === 'unload') return unload(name, res);
      if (method === 'GET' && action === undefined) {
        return loaded.has(name) ? send(res, 200) : send(res, 400, { error: `Model ${name} is not ready` });
      }
    }
    send(res, 404, { error: 'Not Found' });
  };

  const server = await startHttpServer(
    (req, res) =>
      handle(req, res).catch((cause: unknown) => {
        if (!res.headersSent) send(res, 500, { error: String(cause) });
        else res.destroy();
      }),
    options,
  );

  return {
    url: server.url,
    close: async () => {
      closed = true;
      delays.endAll();
      await server.close();
    },
    loaded,
    requests,
    loads,
    get maxConcurrentLoads() {
      return maxConcurrentLoads;
    },
    failNextLoads: (n, status = 503) => {
      failures = { remaining: n, status };
    },
    setLoadDelay: (ms) => {
      loadDelayMs = ms;
    },
    preload: (...names) => {
      for (const name of names) {
        loaded.add(name);
        known.add(name);
      }
    },
    injectFault: (route, fault, times = 1) => {
      faults.set(route, { fault, remaining: times });
    },
  };
};

/** Answers `status` with `body` as JSON, or with an empty body like MLServer's successful loads. */
const send = (res: ServerResponse, status: number, body?: unknown): void => {
  if (res.destroyed || res.headersSent) return;
  const text = body === undefined ? '' : JSON.stringify(body);
  const headers: Record<string, string | number> = { 'Content-Length': Buffer.byteLength(text) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  res.writeHead(status, headers).end(text);
};

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};
