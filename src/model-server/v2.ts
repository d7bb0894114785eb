/** v2ModelServer: the ModelServer port over the Open Inference Protocol model-repository extension. */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as t from 'io-ts';
import { EffectError, httpStatusError, permanentError, retryableError, retryAfterOf } from '../core/errors';
import { isGatekeeperStatus } from '../core/gatekeeper-status';
import type { ModelName } from '../core/model-name';
import { retryDelay, type RetryPolicy } from '../core/retry-policy';
import type { V2ServerKind } from '../core/v2-server-kinds';
import {
  decodeJsonText,
  discardBody,
  errorBodyText,
  errorText,
  headerOf,
  isOk,
  readText,
  type HttpCallResponse,
} from '../net';
import type { ModelServer } from '../ports';
import { readNameFile, refuseMisnamed } from './name-in-files';
import {
  isHtml,
  loadedModelNames,
  notAPage,
  serverEndpoint,
  serverIndexLimits,
  withRetryable,
  type ServerOptions,
} from './server-options';
import type { V2Dialect } from './v2-dialect';
import { dialectAsk } from './v2-kind-ask';

/** Where the server listens, which server it is, and how long calls may take. */
export interface V2ModelServerOptions extends ServerOptions {
  /**
   * Which server it is (`--server-kind`, whose default is `auto`); `auto` asks it (`GET /v2`) before the first
   * call. Default here `generic`: the protocol alone, as before the kinds were told apart.
   */
  readonly kind?: V2ServerKind | 'auto';
  /** Between two looks at the index while Triton unloads a model; default 100 ms, doubling to 1 s. */
  readonly unloadPollMs?: number;
  /** `--model-dir`: where a load first reads the name the model's own files give it (the dialect's `nameFile`). */
  readonly modelDir?: string;
  /**
   * With `auto`: after an answer that is not the server's (a proxy's refusal, a login page), the wait before it is
   * asked again; default 1 s, doubling to `maxKindAskAgainMs` with each such answer.
   */
  readonly kindAskAgainMs?: number;
}

const unknownKindNote =
  "the server's kind is not known yet (GET /v2 was answered by something before it): the KServe model server " +
  'has no repository index; set --server-kind';

const gatekeeperNote =
  'what stands before the server, or its restricted API, refused the call itself: check the credentials and ' +
  "the route modelsync's calls take; not the model's files: the resync loads them again";

// Triton lists a dir it never loaded (hidden dirs, `lost+found`) by name alone: no `state` means not loaded. A state
// that is no string (null) says not loaded either: read as such, it must not make the whole index unreadable (at
// start-up that held every model back as "not answering yet").
const RepositoryIndexEntry = t.intersection(
  [t.type({ name: t.string }), t.partial({ state: t.unknown })],
  'RepositoryIndexEntry',
);
const RepositoryIndex = t.array(RepositoryIndexEntry, 'RepositoryIndex');
/** An entry's state in capitals, '' when it has none a server could mean. */
const stateOf = ({ state }: t.TypeOf<typeof RepositoryIndexEntry>): string =>
  typeof state === 'string' ? state.toUpperCase() : '';
/**
 * Triton's index failing whole because an entry of the repository went between its readdir and its stat (500
 * "failed to stat file <repo>/<entry>"): another model's dir moved aside or deleted while it read, no answer about
 * the model waited for.
 */
const isVanishedEntry = (error: unknown): boolean =>
  error instanceof EffectError && error.status === 500 && error.message.includes('failed to stat file');
/** The index asked up to 3 times more after a vanished entry, 100, 200 and 400 ms apart: Triton's read is quick. */
const vanishedEntryLooks: RetryPolicy = { maxAttempts: 4, baseMs: 100, maxMs: 400, jitter: 'none' };
/** KServe's `GET /v2/models`: the names of the models it holds (it has no repository index). */
const ModelList = t.type({ models: t.array(t.string) }, 'ModelList');

/**
 * The ModelServer of Triton (explicit model control mode), MLServer and the KServe Python model server, which
 * all load `<model dir>/<name>` on `POST /v2/repository/models/<name>/load`. `replacing` needs nothing special:
 * a load of a loaded model reloads it in place, and the old version serves until the new one is ready. What the
 * servers do differently (names in URLs, listing, final failures, unloads that return early) is their dialect.
 */
export const v2ModelServer = (options: V2ModelServerOptions): ModelServer => {
  const { shown, timeoutMs, loadTimeoutMs, call } = serverEndpoint(options);
  const post = (path: string, what: string, ms: number, signal: AbortSignal): Promise<HttpCallResponse> =>
    call('POST', path, what, ms, signal, { headers: { 'Content-Type': 'application/json' }, body: '{}' });
  const failure = async (response: HttpCallResponse): Promise<{ error: EffectError; reason: string }> => {
    // Within the network's bound for error bodies, not the call's (a load's is minutes): a proxy trickling a 503
    // would hold a load slot that long for each attempt.
    const reason = errorText(await errorBodyText(response.body, response.init.timeoutMs));
    // A 429 or 503 may say how long to wait (docs/reliability.md, Model server faults): the retry waits that long.
    const retryAfterMs = retryAfterOf(headerOf(response.headers, 'retry-after'));
    return { error: httpStatusError(response.init.what, response.status, reason, retryAfterMs), reason };
  };

  const { dialect, unsettled } = dialectAsk(options, { shown, timeoutMs, call }, failure);

  const modelPath = (speech: V2Dialect, name: ModelName, action: 'load' | 'unload'): string => {
    const problem = speech.nameProblem(name);
    if (problem !== undefined)
      throw permanentError('refused', `cannot ${action} model "${name}" on ${shown}: ${problem}`);
    return `/v2/repository/models/${speech.pathName(name)}/${action}`;
  };

  // The last listing read: its checksum and the models it said are loaded.
  let lastListing: { readonly checksum: string; readonly loaded: ReadonlyArray<string> } | undefined;
  /** The index's entries, or KServe's model list as entries of loaded models. */
  const listing = async (
    speech: V2Dialect,
    signal: AbortSignal,
    ms = timeoutMs,
  ): Promise<{ readonly text: string; readonly entries: () => t.TypeOf<typeof RepositoryIndex> }> => {
    const byList = speech.listing === 'model-list';
    const what = `model server ${byList ? 'model list' : 'index'} (${shown})`;
    const response = byList
      ? await call('GET', '/v2/models', what, ms, signal)
      : await post('/v2/repository/index', what, ms, signal);
    if (!isOk(response)) {
      const { error } = await failure(response);
      // Spoken to as generic only because GET /v2 was answered by something else: KServe has no index.
      const kindUnknown = options.kind === 'auto' && unsettled() && response.status === 404;
      throw kindUnknown
        ? withRetryable(error, error.retryable, `${error.message} (${unknownKindNote})`)
        : error;
    }
    const text = await readText(response, serverIndexLimits.maxBytes);
    return {
      text,
      entries: () =>
        byList
          ? decodeJsonText(text, ModelList, what, 'a {models: [name]} list').models.map((name) => ({
              name,
              state: 'READY',
            }))
          : decodeJsonText(text, RepositoryIndex, what, 'a list of {name, state?}'),
    };
  };

  /** `listing`, looked at again (`vanishedEntryLooks`) while it failed on a vanished entry. */
  const listingSeen = async (speech: V2Dialect, signal: AbortSignal): ReturnType<typeof listing> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await listing(speech, signal);
      } catch (error) {
        if (attempt >= vanishedEntryLooks.maxAttempts || !isVanishedEntry(error)) throw error;
      }
      await sleep(retryDelay(vanishedEntryLooks, attempt), undefined, { signal });
    }
  };

  const loadedModels: ModelServer['loadedModels'] = async (signal) => {
    const speech = await dialect(signal);
    const { text, entries } = await listingSeen(speech, signal);
    // The resync asks every minute and the answer seldom changes: the same text is not decoded again.
    // What is read from it depends on the dialect too (`auto` may settle on another after the same text).
    const checksum = createHash('sha256').update(`${speech.kind}\n`).update(text).digest('base64');
    if (lastListing?.checksum !== checksum) {
      // Triton lists one entry per version (a model is loaded when any is READY) and every dir, ours included: a
      // name that is no model name (`.tmp-…`, `lost+found` is one) is nobody's model to repair. Nor is one this
      // server cannot take: its unload is no call (no URL names it to Triton), and a resync taking it for an
      // unlisted model said at every resync that it removed what Triton kept serving.
      const ready = entries().filter(
        (entry) => stateOf(entry) === 'READY' && speech.nameProblem(entry.name as ModelName) === undefined,
      );
      const loaded = [...loadedModelNames(ready.map((entry) => entry.name))];
      lastListing = { checksum, loaded };
    }
    return new Set(lastListing.loaded);
  };

  /** Resolves once no version of `name` is READY, LOADING or UNLOADING any more (Triton's unload is async). */
  const unloaded = async (speech: V2Dialect, name: ModelName, signal: AbortSignal): Promise<void> => {
    const deadline = performance.now() + timeoutMs;
    for (let pause = options.unloadPollMs ?? 100; ; pause = Math.min(pause * 2, 1000)) {
      // One deadline for the whole wait: each look gets what is left of it, not a timeout of its own.
      const leftMs = Math.max(1, Math.ceil(deadline - performance.now()));
      const entries = await listing(speech, signal, leftMs).then(
        (answer) => answer.entries(),
        (error: unknown) => {
          if (isVanishedEntry(error)) return undefined; // not seen: looked at again
          throw error;
        },
      );
      const busy =
        entries === undefined ||
        entries.some(
          (entry) => entry.name === name && ['READY', 'LOADING', 'UNLOADING'].includes(stateOf(entry)),
        );
      if (!busy) return;
      if (performance.now() + pause > deadline)
        throw retryableError(
          'timeout',
          `model server unload of "${name}" (${shown}): still unloading after ${timeoutMs} ms`,
        );
      await sleep(pause, undefined, { signal });
    }
  };

  return {
    load: async (name, _replacing, signal) => {
      const speech = await dialect(signal);
      const { nameFile } = speech;
      const filesText =
        options.modelDir === undefined || nameFile === undefined
          ? undefined
          : await readNameFile(options.modelDir, name, nameFile, timeoutMs);
      if (nameFile !== undefined) refuseMisnamed(name, filesText, nameFile);
      const what = `model server load of "${name}" (${shown})`;
      const response = await post(modelPath(speech, name, 'load'), what, loadTimeoutMs, signal);
      if (isOk(response)) return notAPage(response, what, 'loaded', 'the model server');
      const { error, reason } = await failure(response);
      // An auth proxy before the server (kube-rbac-proxy, oauth2-proxy) or the server's own restricted API: the
      // loader leaves it to the resync (src/loader/attempt.ts), and the reason says where to look.
      if (isGatekeeperStatus(response.status))
        throw withRetryable(error, false, `${error.message} (${gatekeeperNote})`);
      // A page (an ingress's 404 for a route not set up yet) is no server's word on the files: retried, not refused.
      if (isHtml(response))
        throw withRetryable(error, true, `${error.message} (an HTML page: not the model server's answer)`);
      // MLServer's 404 "Model … not found" for a dir that is there says nothing of why: its settings file does.
      if (response.status === 404 && filesText !== undefined && nameFile?.notFoundNote !== undefined)
        throw withRetryable(error, error.retryable, `${error.message} (${nameFile.notFoundNote(filesText)})`);
      if (speech.isPendingLoadFailure(response.status, reason, filesText)) throw withRetryable(error, true);
      throw error.retryable && speech.isFinalLoadFailure(response.status, reason)
        ? withRetryable(error, false)
        : error;
    },

    unload: async (name, signal) => {
      const speech = await dialect(signal);
      // A name this server cannot take was never loaded on it (its load was refused): nothing to unload.
      if (speech.nameProblem(name) !== undefined) return;
      const what = `model server unload of "${name}" (${shown})`;
      const response = await post(modelPath(speech, name, 'unload'), what, timeoutMs, signal);
      // MLServer and the KServe server answer 404 for a model they do not have loaded: that is the goal. Not a
      // 404 page (a proxy's, with no route to the server): its files would be deleted while the server holds them.
      const goneAlready = response.status === 404 && !isHtml(response);
      if (!isOk(response) && !goneAlready) throw (await failure(response)).error;
      if (isOk(response)) await notAPage(response, what, 'unloaded', 'the model server');
      else await discardBody(response);
      // Triton answers before the model is unloaded, and its files must not change until it is.
      if (speech.unloadReturnsEarly) await unloaded(speech, name, signal);
    },

    loadedModels,

    // The kind is known by now: the agent's start asked for the loaded models before any install.
    vetFiles: async (name, files, signal) => (await dialect(signal)).vetFiles?.(name, files),
  };
};
