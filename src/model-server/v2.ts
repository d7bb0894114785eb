/** v2ModelServer: the ModelServer port over the Open Inference Protocol model-repository extension. */
import { createHash } from 'node:crypto';
import * as t from 'io-ts';
import type { ModelName } from '../core/model-name';
import { redactUri } from '../core/redact';
import type { ModelServer } from '../ports';
import type { Dispatcher } from 'undici';
import {
  decodeJsonText,
  discardBody,
  httpCall,
  isOk,
  readText,
  statusError,
  type HttpCallResponse,
} from '../net';

/** Where the server listens and how long calls may take. */
export interface V2ModelServerOptions {
  /** The server's HTTP root, e.g. `http://127.0.0.1:8000` (Triton) or `http://127.0.0.1:8080` (MLServer, KServe). */
  readonly baseUrl: string;
  /** Timeout of index and unload calls, and of loads unless `loadTimeoutMs` is given; default 30 s. */
  readonly timeoutMs?: number;
  /** Timeout of a load, which returns only once the model is loaded; default 300 s. */
  readonly loadTimeoutMs?: number;
  /** The connection pool (a Network's `direct`: keep-alive, never through a proxy); default undici's global one. */
  readonly dispatcher?: Dispatcher;
}

const defaultTimeoutMs = 30_000;
const defaultLoadTimeoutMs = 300_000;
const json = { 'Content-Type': 'application/json' };

/** One entry of `POST /v2/repository/index`; servers add fields (version, reason) that are not needed here. */
const RepositoryIndexEntry = t.type({ name: t.string, state: t.string }, 'RepositoryIndexEntry');
const RepositoryIndex = t.array(RepositoryIndexEntry, 'RepositoryIndex');

/**
 * The ModelServer of Triton (explicit model control mode), MLServer and the KServe Python model server, which
 * all load `<model dir>/<name>` on `POST /v2/repository/models/<name>/load`. `replacing` needs nothing special:
 * a load of a loaded model reloads it in place, and the old version serves until the new one is ready.
 */
export const v2ModelServer = (options: V2ModelServerOptions): ModelServer => {
  const base = options.baseUrl.replace(/\/+$/, '');
  // Messages name the server without the user info or query its URL may carry.
  const shown = redactUri(base);
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const loadTimeoutMs = options.loadTimeoutMs ?? options.timeoutMs ?? defaultLoadTimeoutMs;
  const modelUrl = (name: ModelName, action: 'load' | 'unload'): string =>
    `${base}/v2/repository/models/${encodeURIComponent(name)}/${action}`;
  const post = (url: string, what: string, ms: number, signal: AbortSignal): Promise<HttpCallResponse> =>
    httpCall(url, {
      method: 'POST',
      headers: json,
      body: '{}',
      what,
      timeoutMs: ms,
      signal,
      dispatcher: options.dispatcher,
    });
  // The last index read: its checksum and the models it listed ready.
  let lastIndex: { readonly checksum: string; readonly ready: ReadonlyArray<string> } | undefined;

  return {
    load: async (name, _replacing, signal) => {
      const what = `model server load of "${name}" (${shown})`;
      const call = await post(modelUrl(name, 'load'), what, loadTimeoutMs, signal);
      if (!isOk(call)) throw await statusError(call);
      await discardBody(call);
    },

    unload: async (name, signal) => {
      const what = `model server unload of "${name}" (${shown})`;
      const call = await post(modelUrl(name, 'unload'), what, timeoutMs, signal);
      // MLServer and the KServe server answer 404 for a model they do not have loaded: that is the goal.
      if (!isOk(call) && call.status !== 404) throw await statusError(call);
      await discardBody(call);
    },

    loadedModels: async (signal) => {
      const what = `model server index (${shown})`;
      const call = await post(`${base}/v2/repository/index`, what, timeoutMs, signal);
      if (!isOk(call)) throw await statusError(call);
      const text = await readText(call);
      // The resync asks every minute and the answer seldom changes: the same text is not parsed and decoded again.
      const checksum = createHash('sha256').update(text).digest('base64');
      if (lastIndex?.checksum !== checksum) {
        const index = decodeJsonText(text, RepositoryIndex, what, 'a list of {name, state}');
        // Triton lists one entry per version: a model is loaded when any of its versions is ready.
        const ready = index.filter((m) => m.state.toUpperCase() === 'READY').map((m) => m.name);
        lastIndex = { checksum, ready };
      }
      return new Set(lastIndex.ready);
    },
  };
};
