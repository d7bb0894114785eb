/**
 * The fixture models global setup makes (scripts/model-servers/make-models.py) and the calls that use them on a
 * real server: load, unload, and `infer`, whose answer tells v1 (1) from v2 (2). The request shapes are the ones
 * recorded on the real servers (the lab's FINDINGS.md §3–5).
 */
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { httpCall, type HttpAnswer } from './http';
import { modelsDir, type RealServerKind } from './paths';

export type { HttpAnswer } from './http';

/**
 * A fixture model, the same name for every kind:
 * - `v1`, `v2`: good models whose inference answers 1 and 2 (`infer`);
 * - `bad-config`: a config the server cannot read (Triton's config.pbtxt, MLServer's model-settings.json,
 *   the launcher's model.json): Triton 500 "failed to poll", MLServer 404 "not found", KServe 503;
 * - `raise-on-load`: the model's own code raises `RuntimeError("raise-on-load: boom")` while loading: Triton 400,
 *   MLServer 500 (`{"error":"builtins.RuntimeError: raise-on-load: boom"}` with one parallel worker), KServe 503;
 * - `slow-unload` (Triton only): v1 whose finalize() sleeps 2 s, so an unload's 200 comes about 3 s before the
 *   index says `UNAVAILABLE`/`unloaded`.
 */
export type FixtureVariant = 'v1' | 'v2' | 'bad-config' | 'raise-on-load' | 'slow-unload';

/** The variants made for each kind. */
export const fixtureVariants: Readonly<Record<RealServerKind, ReadonlyArray<FixtureVariant>>> = {
  triton: ['v1', 'v2', 'bad-config', 'raise-on-load', 'slow-unload'],
  mlserver: ['v1', 'v2', 'bad-config', 'raise-on-load'],
  kserve: ['v1', 'v2', 'bad-config', 'raise-on-load'],
};

/** What `infer` answers for each good variant. */
export const inferredVersion = { v1: 1, v2: 2, 'slow-unload': 1 } as const;

/** The dir of a fixture (`.model-servers/models/<kind>/<variant>/`); throws when it was not made. */
export const fixtureModel = (kind: RealServerKind, variant: FixtureVariant): string => {
  if (!fixtureVariants[kind].includes(variant)) throw new Error(`there is no ${variant} fixture for ${kind}`);
  const dir = join(modelsDir, kind, variant);
  if (!existsSync(dir))
    throw new Error(`${dir} is missing: the e2e project's globalSetup (test/e2e-setup.ts) makes it`);
  return dir;
};

/** Copies a fixture to `<modelDir>/<name>/` (replacing what is there) and returns that dir. */
export const copyFixture = (
  kind: RealServerKind,
  variant: FixtureVariant,
  modelDir: string,
  name: string,
): string => {
  const target = join(modelDir, name);
  cpSync(fixtureModel(kind, variant), target, { recursive: true, force: true });
  return target;
};

/** What the model calls need of a server: `RealServer` has both. */
export interface ServerAddress {
  readonly kind: RealServerKind;
  readonly url: string;
}

// Triton looks a path up without decoding it and hangs on shell characters (FINDINGS §0.2–0.4): it gets safe
// names raw; MLServer and KServe decode the path, so they get it encoded.
const tritonSafe = /^[A-Za-z0-9_.+:-]+$/;

/** `name` as it goes into a URL path of `kind`. */
export const pathName = (kind: RealServerKind, name: string): string => {
  if (kind !== 'triton') return encodeURIComponent(name);
  if (!tritonSafe.test(name)) throw new Error(`${JSON.stringify(name)}: not a name to send to a real Triton`);
  return name;
};

/** `POST /v2/repository/models/<name>/load` with `{}`; the answer as it came. */
export const loadModel = (server: ServerAddress, name: string, timeoutMs = 60_000): Promise<HttpAnswer> =>
  httpCall('POST', `${server.url}/v2/repository/models/${pathName(server.kind, name)}/load`, {}, timeoutMs);

/** `POST /v2/repository/models/<name>/unload` with `{}`; the answer as it came (Triton's 200 comes early). */
export const unloadModel = (server: ServerAddress, name: string, timeoutMs = 60_000): Promise<HttpAnswer> =>
  httpCall('POST', `${server.url}/v2/repository/models/${pathName(server.kind, name)}/unload`, {}, timeoutMs);

/** The loaded models' names: the repository index's `READY` entries, or KServe's `GET /v2/models` (no index). */
export const loadedModels = async (server: ServerAddress): Promise<string[]> => {
  if (server.kind === 'kserve') {
    const answer = expectOk(await httpCall('GET', `${server.url}/v2/models`), 'GET /v2/models');
    return (JSON.parse(answer.body) as { models: string[] }).models;
  }
  const answer = expectOk(
    await httpCall('POST', `${server.url}/v2/repository/index`, {}),
    'POST /v2/repository/index',
  );
  return (JSON.parse(answer.body) as Array<{ name: string; state?: string }>)
    .filter((entry) => entry.state === 'READY')
    .map((entry) => entry.name);
};

/**
 * Resolves once `name` is gone from the server: at once after the unload's 200 on MLServer and KServe; on Triton
 * when its index entry is `UNAVAILABLE` (the 200 comes while it is still `UNLOADING`, ≈1 s, + 2 s for
 * `slow-unload`).
 */
export const waitUnloaded = async (
  server: ServerAddress,
  name: string,
  timeoutMs = 15_000,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.kind !== 'triton') {
      if (!(await loadedModels(server)).includes(name)) return;
    } else {
      const answer = expectOk(
        await httpCall('POST', `${server.url}/v2/repository/index`, {}),
        'POST /v2/repository/index',
      );
      const entry = (JSON.parse(answer.body) as Array<{ name: string; state?: string }>).find(
        (candidate) => candidate.name === name,
      );
      if (entry === undefined || entry.state === undefined || entry.state === 'UNAVAILABLE') return;
    }
    if (Date.now() > deadline)
      throw new Error(`${server.kind}: ${name} still loaded ${timeoutMs} ms after its unload`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/** A failed call: the server's status and body, as it answered. */
export class ServerAnswerError extends Error {
  constructor(
    what: string,
    readonly answer: HttpAnswer,
  ) {
    super(`${what}: ${answer.status} ${answer.body.slice(0, 2000)}`);
    this.name = 'ServerAnswerError';
  }
}

const expectOk = (answer: HttpAnswer, what: string): HttpAnswer => {
  if (answer.status !== 200) throw new ServerAnswerError(what, answer);
  return answer;
};

// The requests that worked on each server, and how the answer gives the fixture's number.
const inferRequests: Record<RealServerKind, { body: unknown; value: (data: number[]) => number[] }> = {
  // python backend, FP32 [-1]: OUTPUT0 = INPUT0 + 1 (v1) / + 2 (v2)
  triton: {
    body: { inputs: [{ name: 'INPUT0', shape: [3], datatype: 'FP32', data: [1, 2, 3] }] },
    value: (data) => data.map((y, i) => y - (i + 1)),
  },
  // sklearn DummyRegressor(constant=1.0 | 2.0): one prediction per row of the [2, 2] input
  mlserver: {
    body: { inputs: [{ name: 'input-0', shape: [2, 2], datatype: 'FP32', data: [1, 2, 3, 4] }] },
    value: (data) => data,
  },
  // kserve-server.py's AddModel: input + add
  kserve: {
    body: { inputs: [{ name: 'input-0', shape: [3], datatype: 'FP32', data: [1, 2, 3] }] },
    value: (data) => data.map((y, i) => y - (i + 1)),
  },
};

/**
 * `POST /v2/models/<name>/infer` with the request that model kind takes; resolves with the fixture's number
 * (1 for `v1`, 2 for `v2`), or rejects with a `ServerAnswerError` carrying the server's answer (a model not
 * loaded: Triton 400/404, MLServer and KServe 404) or an Error when the outputs do not agree on one number.
 */
export const infer = async (server: ServerAddress, name: string, timeoutMs = 30_000): Promise<number> => {
  const request = inferRequests[server.kind];
  const what = `${server.kind}: POST /v2/models/${name}/infer`;
  const answer = expectOk(
    await httpCall(
      'POST',
      `${server.url}/v2/models/${pathName(server.kind, name)}/infer`,
      request.body,
      timeoutMs,
    ),
    what,
  );
  const outputs = (JSON.parse(answer.body) as { outputs?: Array<{ data?: unknown }> }).outputs;
  const data = outputs?.[0]?.data;
  if (!Array.isArray(data) || data.length === 0 || !data.every((value) => typeof value === 'number'))
    throw new ServerAnswerError(`${what}: no numeric outputs[0].data`, answer);
  const values = request.value(data);
  if (!values.every((value) => value === values[0]))
    throw new ServerAnswerError(
      `${what}: the outputs do not tell one version (${values.join(', ')})`,
      answer,
    );
  return values[0]!;
};
