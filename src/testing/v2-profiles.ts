/**
 * V2 stand-in profiles: Triton 2.51, MLServer 1.7.1 and the KServe 0.21 model server as the conformance suite
 * recorded them (codes, bodies, content types, index entries, the timing of Triton's unload). `generic` is the
 * stand-in's own reading of the protocol. test/model-server/conformance.e2e.test.ts fails when a profile and its
 * server disagree.
 */

import type { V2ServerKind } from '../core/v2-server-kinds';

/** The servers a stand-in can play: every kind modelsync tells apart (`v2Profiles` has one for each but generic). */
export type V2ProfileName = V2ServerKind;

/** One answer: the status, the body as it goes on the wire, and its content type (none: no header). */
export interface V2Answer {
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
}

/** Where a model stands on the server, as its index would say. */
export type V2Lifecycle =
  | { readonly _tag: 'Loaded' }
  | { readonly _tag: 'Unloading' }
  | { readonly _tag: 'Unloaded' }
  | { readonly _tag: 'Failed'; readonly reason: string };

/** A model dir as a profile sees it: its name, and the `name`/`version` of its settings file when it has one. */
export interface V2RepositoryDir {
  readonly name: string;
  readonly settings?: { readonly name?: string; readonly version?: string };
}

/** How a load failed: the dir is missing, its config cannot be read, or the model raised while loading. */
export type V2LoadFailure = 'missing' | 'config' | 'raised';

/** What a profile answers; `undefined` where the generic stand-in's behaviour applies. */
export interface V2Profile {
  readonly name: V2ProfileName;
  /** `GET /v2`. */
  readonly metadata?: V2Answer;
  /** The model name a path segment means: Triton looks it up as it is, the others decode it. */
  readonly nameOf: (segment: string) => string;
  /** What a name does to the server before it is answered: Triton hangs on shell characters, drops a space. */
  readonly hazard: (name: string) => 'hang' | 'drop' | undefined;
  readonly loaded: (name: string) => V2Answer;
  readonly loadFailed: (name: string, failure: V2LoadFailure, repo: string) => V2Answer;
  /**
   * What the index says of a model whose load failed and that was not loaded before: Triton keeps a backend's
   * failure with its reason, but a dir it could not poll stays a bare name (undefined).
   */
  readonly failedLifecycle: (name: string, failure: V2LoadFailure, repo: string) => V2Lifecycle | undefined;
  readonly unloaded: (name: string) => V2Answer;
  /** An unload of a model it does not hold. */
  readonly unknownUnload: (name: string) => V2Answer;
  /** How long a Triton model stays UNLOADING after the unload's answer. */
  readonly unloadingMs: number;
  /** `POST /v2/repository/index`: the answer for the dirs and lifecycles, or (KServe) no such route. */
  readonly index: (
    dirs: ReadonlyArray<V2RepositoryDir>,
    lifecycle: (name: string) => V2Lifecycle | undefined,
    body: string,
  ) => V2Answer;
  /** `GET /v2/models` (KServe's list of what it holds); undefined: no such route. */
  readonly modelList?: (loaded: ReadonlyArray<string>) => V2Answer;
  readonly health: (which: 'live' | 'ready') => V2Answer;
  readonly modelReady: (name: string, ready: boolean) => V2Answer;
  /** A route it does not have. */
  readonly notFound: V2Answer;
}

const jsonType = 'application/json';
/** `value` as JSON with `contentType`; `null` sends no content type at all (MLServer's empty successes). */
const answer = (status: number, value?: unknown, contentType: string | null = jsonType): V2Answer => ({
  status,
  body: value === undefined ? '' : JSON.stringify(value),
  ...(contentType === null ? {} : { contentType }),
});
const decoded = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};
const raisedMessage = 'raise-on-load: boom';

const triton: V2Profile = {
  name: 'triton',
  metadata: answer(200, {
    name: 'triton',
    version: '2.51.0',
    extensions: ['classification', 'sequence', 'model_repository', 'model_repository(unload_dependents)'],
  }),
  nameOf: (segment) => segment,
  hazard: (name) => (/[;&|'"`$()<>\\]/.test(name) ? 'hang' : name.includes(' ') ? 'drop' : undefined),
  loaded: () => answer(200, undefined),
  loadFailed: (name, failure) =>
    failure === 'raised'
      ? answer(400, {
          error:
            `load failed for model '${name}': version 1 is at UNAVAILABLE state: Internal: RuntimeError: ` +
            `${raisedMessage}\n\nAt:\n  ${name}/1/model.py(17): initialize\n;\n`,
        })
      : answer(500, { error: `failed to load '${name}', failed to poll from model repository` }),
  failedLifecycle: (name, failure, repo) =>
    failure === 'raised'
      ? {
          _tag: 'Failed',
          reason: `Internal: RuntimeError: ${raisedMessage}\n\nAt:\n  ${repo}/${name}/1/model.py(17): initialize\n`,
        }
      : undefined,
  unloaded: () => answer(200, undefined),
  unknownUnload: () => answer(200, undefined),
  unloadingMs: 1100,
  index: (dirs, lifecycle) =>
    answer(
      200,
      [...dirs]
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .map(({ name }) => {
          const now = lifecycle(name);
          if (now === undefined) return { name };
          if (now._tag === 'Loaded') return { name, version: '1', state: 'READY' };
          if (now._tag === 'Unloading') return { name, version: '1', state: 'UNLOADING' };
          const reason = now._tag === 'Unloaded' ? 'unloaded' : now.reason;
          return { name, version: '1', state: 'UNAVAILABLE', reason };
        }),
    ),
  health: () => answer(200, undefined, 'text/plain'),
  modelReady: (_name, ready) =>
    ready
      ? answer(200, undefined, 'text/plain')
      : answer(400, { error: 'Model version not ready' }, 'text/plain'),
  notFound: answer(404, { error: 'Not Found' }, 'text/plain'),
};

const mlserver: V2Profile = {
  name: 'mlserver',
  metadata: answer(200, { name: 'mlserver', version: '1.7.1', extensions: [] }),
  nameOf: decoded,
  hazard: () => undefined,
  loaded: () => answer(200, undefined, null),
  loadFailed: (name, failure) =>
    failure === 'raised'
      ? answer(500, { error: `builtins.RuntimeError: ${raisedMessage}` })
      : answer(404, { error: `Model ${name} not found` }),
  failedLifecycle: (_name, failure) => ({ _tag: 'Failed', reason: failure }),
  unloaded: () => answer(200, undefined, null),
  unknownUnload: (name) => answer(404, { error: `Model ${name} not found` }),
  unloadingMs: 0,
  index: (dirs, lifecycle, body) =>
    body.trim() === ''
      ? answer(422, { detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }] })
      : answer(
          200,
          dirs
            .filter((dir) => dir.settings !== undefined && !dir.name.startsWith('.'))
            .map(({ name, settings }) => ({
              name: settings?.name ?? name,
              ...(settings?.version === undefined ? {} : { version: settings.version }),
              state: lifecycle(settings?.name ?? name)?._tag === 'Loaded' ? 'READY' : 'UNAVAILABLE',
              reason: '',
            })),
        ),
  health: () => answer(200, undefined, null),
  modelReady: (name, ready) =>
    ready ? answer(200, undefined, null) : answer(404, { error: `Model ${name} not found` }),
  notFound: answer(404, { detail: 'Not Found' }),
};

const kserveMissing = (name: string): { error: string } => ({
  error: `Model with name ${name} does not exist.`,
});

const kserve: V2Profile = {
  name: 'kserve',
  metadata: answer(200, { name: 'kserve', version: '0.21.0', extensions: ['model_repository_extension'] }),
  nameOf: decoded,
  hazard: () => undefined,
  loaded: (name) => answer(200, { name, load: true }),
  loadFailed: (name, failure, repo) => {
    const cause =
      failure === 'raised'
        ? `<class 'RuntimeError'> error msg: ${raisedMessage}`
        : failure === 'config'
          ? "<class 'json.decoder.JSONDecodeError'> error msg: Expecting value: line 1 column 9 (char 8)"
          : `<class 'FileNotFoundError'> error msg: [Errno 2] No such file or directory: '${repo}/${name}/model.json'`;
    return answer(503, { error: `Model with name ${name} is not ready. Error type: ${cause}` });
  },
  failedLifecycle: (_name, failure) => ({ _tag: 'Failed', reason: failure }),
  unloaded: (name) => answer(200, { name, unload: true }),
  unknownUnload: (name) => answer(404, kserveMissing(name)),
  unloadingMs: 0,
  index: () => answer(404, { detail: 'Not Found' }),
  modelList: (loaded) => answer(200, { models: [...loaded] }),
  health: (which) => answer(200, which === 'live' ? { live: true } : { ready: true }),
  modelReady: (name, ready) =>
    ready ? answer(200, { name, ready: true }) : answer(404, kserveMissing(name)),
  notFound: answer(404, { detail: 'Not Found' }),
};

/** The profiles by name; `generic` has none of its own answers (the stand-in's defaults). */
export const v2Profiles: Readonly<Record<Exclude<V2ProfileName, 'generic'>, V2Profile>> = {
  triton,
  mlserver,
  kserve,
};
