/** torchServeModelServer: the ModelServer port over TorchServe's management API (register, unregister, list). */
import { readFile } from 'node:fs/promises';
import * as t from 'io-ts';
import { PathReporter } from 'io-ts/PathReporter';
import { isLeft } from 'fp-ts/Either';
import { httpStatusError, permanentError, retryableError } from '../core/errors';
import type { ModelName } from '../core/model-name';
import type { ModelServer } from '../ports';
import { discardBody, errorText, httpCall, readText, statusError, type HttpCallResponse } from './http-call';

/** Where the management API listens, how long calls may take, and where its key is. */
export interface TorchServeModelServerOptions {
  /** The management API root, e.g. `http://127.0.0.1:8081`. */
  readonly baseUrl: string;
  /** Timeout of list and unregister calls, and of registers unless `loadTimeoutMs` is given; default 30 s. */
  readonly timeoutMs?: number;
  /** Timeout of a register, which waits for the first worker to start; default 300 s. */
  readonly loadTimeoutMs?: number;
  /**
   * TorchServe's `key_file.json` (its `management.key` is used) or a file holding just the token. Read on every
   * call, so a rotated key is picked up without a restart. Unset: no Authorization header (token auth disabled).
   */
  readonly tokenFile?: string;
}

const defaultTimeoutMs = 30_000;
const defaultLoadTimeoutMs = 300_000;
const pageSize = 100;
// A server that keeps handing out page tokens would otherwise keep loadedModels going forever.
const maxPages = 1000;

const ListModelsResponse = t.intersection(
  [
    t.type({ models: t.array(t.type({ modelName: t.string }, 'ModelSummary')) }),
    t.partial({ nextPageToken: t.union([t.string, t.number, t.null]) }),
  ],
  'ListModelsResponse',
);

/**
 * The ModelServer of TorchServe. A model is registered from the model store, which must be modelsync's model
 * directory (`--model-store <model dir>`): `url=<name>` names the directory `<model dir>/<name>/`, which holds
 * an unpacked model archive (`MAR-INF/MANIFEST.json`, handler, weights), TorchServe's "no-archive" format.
 * Registering starts one worker and waits for it (`synchronous=true`). "Loaded" means registered, as listed by
 * `GET /models`. A replacement is unregistered first, because TorchServe will not re-register a name in place.
 */
export const torchServeModelServer = (options: TorchServeModelServerOptions): ModelServer => {
  const base = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const loadTimeoutMs = options.loadTimeoutMs ?? options.timeoutMs ?? defaultLoadTimeoutMs;
  const { tokenFile } = options;

  const call = async (
    method: string,
    url: string,
    what: string,
    ms: number,
    signal: AbortSignal,
  ): Promise<HttpCallResponse> => {
    const headers: Record<string, string> =
      tokenFile === undefined ? {} : { Authorization: `Bearer ${await readToken(tokenFile)}` };
    const result = await httpCall(url, { method, headers, what, timeoutMs: ms, signal });
    const { status } = result.response;
    // Every caller fails on 400 and 401 anyway; with a token file they may mean the key was rotated.
    if (tokenFile === undefined || (status !== 400 && status !== 401)) return result;
    const text = errorText(await readText(result, maxErrorBodyBytes).catch(() => ''));
    if (status === 401 || tokenRejected.test(text)) {
      // TorchServe keys expire and get replaced in the key file: the next attempt re-reads it, so retry.
      throw retryableError(
        `${what}: TorchServe rejected the token from ${tokenFile} (${text}); will re-read it`,
      );
    }
    throw httpStatusError(what, status, text);
  };

  const unregister = async (name: ModelName, signal: AbortSignal): Promise<void> => {
    const what = `TorchServe unregister of "${name}" (${base})`;
    const result = await call(
      'DELETE',
      `${base}/models/${encodeURIComponent(name)}`,
      what,
      timeoutMs,
      signal,
    );
    const { status } = result.response;
    if (result.response.ok || status === 404) return discardBody(result);
    const error = await statusError(result);
    // 409: an unregistration of this model is already in progress; it will be over by the next attempt.
    throw status === 409 ? retryableError(error.message) : error;
  };

  return {
    load: async (name, replacing, signal) => {
      if (replacing) await unregister(name, signal);
      const what = `TorchServe register of "${name}" (${base})`;
      const query = new URLSearchParams({
        url: name,
        model_name: name,
        initial_workers: '1',
        synchronous: 'true',
      });
      const result = await call('POST', `${base}/models?${query.toString()}`, what, loadTimeoutMs, signal);
      const { status } = result.response;
      if (status === 200 || status === 201 || status === 202) return discardBody(result);
      const error = await statusError(result);
      if (status !== 409) throw error;
      // Already registered: the wanted state, unless we just unregistered it and someone registered it again.
      if (!replacing) return;
      throw retryableError(`${error.message} (right after unregistering it for the replacement)`);
    },

    unload: unregister,

    loadedModels: async (signal) => {
      const names = new Set<string>();
      let pageToken: string | undefined;
      for (let page = 0; page < maxPages; page++) {
        const query = new URLSearchParams({ limit: String(pageSize) });
        if (pageToken !== undefined) query.set('next_page_token', pageToken);
        const what = `TorchServe model list (${base})`;
        const result = await call('GET', `${base}/models?${query.toString()}`, what, timeoutMs, signal);
        if (!result.response.ok) throw await statusError(result);
        const body = decodeList(what, await readText(result));
        for (const model of body.models) names.add(model.modelName);
        const next = body.nextPageToken;
        if (next === undefined || next === null || String(next) === '' || String(next) === pageToken) {
          return names;
        }
        pageToken = String(next);
      }
      throw retryableError(`TorchServe model list (${base}) still had more pages after ${maxPages}`);
    },
  };
};

const decodeList = (what: string, text: string): t.TypeOf<typeof ListModelsResponse> => {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (cause) {
    throw retryableError(`${what} returned a body that is not JSON: ${text.trim().slice(0, 200)}`, cause);
  }
  const decoded = ListModelsResponse.decode(body);
  if (isLeft(decoded)) {
    const problems = PathReporter.report(decoded).slice(0, 3).join('; ');
    throw retryableError(`${what} returned a body that is not a model list: ${problems}`);
  }
  return decoded.right;
};

/**
 * The management token in `file`: `management.key` of TorchServe's key file, or the whole (trimmed) text.
 * A missing, empty or half-written file is retryable: TorchServe writes the key file when it starts.
 */
const readToken = async (file: string): Promise<string> => {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    throw retryableError(`cannot read the TorchServe token file ${file}: ${String(code ?? cause)}`, cause);
  }
  if (text === '') throw retryableError(`the TorchServe token file ${file} is empty`);
  if (!text.startsWith('{')) return text;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw retryableError(`the TorchServe token file ${file} is not valid JSON (being rewritten?)`, cause);
  }
  const key = (json as { management?: { key?: unknown } } | null)?.management?.key;
  if (typeof key === 'string' && key !== '') return key;
  throw permanentError(`the TorchServe key file ${file} has no management.key`);
};

// TorchServe answers a missing or wrong key with 400 "Token Authorization failed..." (TokenAuthorizationHandler);
// a proxy in front would say 401. 403 is not one: TorchServe uses it for refused arguments.
const tokenRejected = /token (authorization|authentication) failed/i;
const maxErrorBodyBytes = 64 * 1024;
