/** The V2 stand-in's routes as one real server answers them (a profile of v2-profiles.ts). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { V2Load } from './v2-stand-in-api';
import type { V2Answer, V2Lifecycle, V2Profile } from './v2-profiles';
import { dirOfModel, repositoryDirs, standInModel } from './v2-repository';

/** What the routes share with the stand-in around them. */
export interface ProfiledState {
  readonly modelDir: string | undefined;
  readonly loaded: Set<string>;
  readonly loads: V2Load[];
  /** Waits out the load delay (and is ended by close). */
  readonly loadDelay: () => Promise<void>;
  readonly hang: () => Promise<void>;
  readonly isClosed: () => boolean;
}

const modelRoute = /^\/v2\/repository\/models\/([^/]+)\/(load|unload)$/;
const readyRoute = /^\/v2\/models\/([^/]+)\/ready$/;
const inferRoute = /^\/v2\/models\/([^/]+)\/infer$/;

/** Writes `answer` (a body without a content type gets no such header, as MLServer's successes). */
export const write = (res: ServerResponse, { status, body, contentType }: V2Answer): void => {
  if (res.destroyed || res.headersSent) return;
  const headers: Record<string, string | number> = { 'Content-Length': Buffer.byteLength(body) };
  if (contentType !== undefined) headers['Content-Type'] = contentType;
  res.writeHead(status, headers).end(body);
};

/** A V2 inference request's first input: its numbers and its shape, or undefined when it has none. */
const firstInput = (body: string): { readonly data: number[]; readonly rows: number } | undefined => {
  try {
    const request = JSON.parse(body) as { inputs?: Array<{ data?: unknown; shape?: unknown }> };
    const { data, shape } = request.inputs?.[0] ?? {};
    if (!Array.isArray(data) || !data.every((x) => typeof x === 'number')) return undefined;
    const rows = Array.isArray(shape) && typeof shape[0] === 'number' ? shape[0] : data.length;
    return { data, rows };
  } catch {
    return undefined;
  }
};

/** The routes of `profile` over `state`: answers a request and returns true, or false for one it does not know. */
export const profiledRoutes = (profile: V2Profile, state: ProfiledState) => {
  const lifecycle = new Map<string, V2Lifecycle>();
  const adds = new Map<string, number>();
  const repo = state.modelDir ?? '';

  const load = async (name: string, res: ServerResponse): Promise<void> => {
    await state.loadDelay();
    if (state.isClosed()) return;
    const dir = dirOfModel(await repositoryDirs(state.modelDir), name, profile.name === 'mlserver');
    const model = dir === undefined ? undefined : await standInModel(repo, dir.name);
    const failure = model === undefined ? 'missing' : model.fails;
    if (failure !== undefined) {
      // A failed reload leaves the version that was serving in place (all three servers).
      if (!state.loaded.has(name)) {
        const failed = profile.failedLifecycle(name, failure, repo);
        if (failed === undefined) lifecycle.delete(name);
        else lifecycle.set(name, failed);
      }
      const answer = profile.loadFailed(name, failure, repo);
      state.loads.push({ name, complete: false, status: answer.status });
      return write(res, answer);
    }
    state.loaded.add(name);
    lifecycle.set(name, { _tag: 'Loaded' });
    adds.set(name, model?.adds ?? 0);
    state.loads.push({ name, complete: true, status: 200 });
    write(res, profile.loaded(name));
  };

  const unload = (name: string, res: ServerResponse): void => {
    if (!state.loaded.delete(name)) return write(res, profile.unknownUnload(name));
    adds.delete(name);
    if (profile.unloadingMs === 0) lifecycle.set(name, { _tag: 'Unloaded' });
    else {
      lifecycle.set(name, { _tag: 'Unloading' });
      const done = setTimeout(() => {
        if (lifecycle.get(name)?._tag === 'Unloading') lifecycle.set(name, { _tag: 'Unloaded' });
      }, profile.unloadingMs);
      done.unref();
    }
    write(res, profile.unloaded(name));
  };

  // The fixtures' models: Triton's and KServe's add to their input, MLServer's sklearn one predicts its constant.
  const infer = (name: string, body: string, res: ServerResponse): void => {
    const input = firstInput(body);
    if (!state.loaded.has(name) || input === undefined)
      return write(res, { status: 404, body: JSON.stringify({ error: `Model ${name} not found` }) });
    const value = adds.get(name)!;
    const data =
      profile.name === 'mlserver'
        ? input.data.slice(0, input.rows).map(() => value)
        : input.data.map((x) => x + value);
    const outputs = [{ name: 'output', datatype: 'FP32', shape: [data.length], data }];
    write(res, {
      status: 200,
      body: JSON.stringify({ model_name: name, outputs }),
      contentType: 'application/json',
    });
  };

  return async (req: IncomingMessage, res: ServerResponse, path: string, body: string): Promise<boolean> => {
    const method = req.method ?? 'GET';
    const match = modelRoute.exec(path) ?? readyRoute.exec(path) ?? inferRoute.exec(path);
    const name = match === null ? undefined : profile.nameOf(match[1]!);
    if (name !== undefined) {
      const hazard = profile.hazard(name);
      if (hazard === 'drop') return (req.socket.destroy(), true);
      if (hazard === 'hang') return (await state.hang(), true);
    }
    if (method === 'GET' && path === '/v2' && profile.metadata !== undefined)
      return (write(res, profile.metadata), true);
    if (method === 'POST' && path === '/v2/repository/index')
      return (
        write(
          res,
          profile.index(await repositoryDirs(state.modelDir), (n) => lifecycle.get(n), body),
        ),
        true
      );
    if (method === 'GET' && path === '/v2/models' && profile.modelList !== undefined)
      return (write(res, profile.modelList([...state.loaded].sort())), true);
    if (method === 'GET' && (path === '/v2/health/live' || path === '/v2/health/ready'))
      return (write(res, profile.health(path.endsWith('live') ? 'live' : 'ready')), true);
    if (name === undefined) return (write(res, profile.notFound), true);
    if (method === 'POST' && path.endsWith('/load')) return (await load(name, res), true);
    if (method === 'POST' && path.endsWith('/unload')) return (unload(name, res), true);
    if (method === 'GET' && path.endsWith('/ready'))
      return (write(res, profile.modelReady(name, state.loaded.has(name))), true);
    if (method === 'POST' && path.endsWith('/infer')) return (infer(name, body, res), true);
    write(res, profile.notFound);
    return true;
  };
};
