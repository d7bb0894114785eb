/** torchServeModelServer: the ModelServer port over TorchServe's management API (register, unregister, list). */
import { isLeft } from 'fp-ts/Either';
import * as t from 'io-ts';
import { sendableToken } from '../core/bearer-token';
import {
  errorCode,
  errorMessage,
  httpStatusError,
  permanentError,
  retryableError,
  type EffectError,
} from '../core/errors';
import { isGatekeeperStatus } from '../core/gatekeeper-status';
import { parseJson } from '../core/json/json';
import type { ModelName } from '../core/model-name';
import { registerRotatingSecrets } from '../core/redact';
import { within } from '../core/waits';
import type { ModelServer } from '../ports';
import {
  isHtml,
  loadedModelNames,
  notAPage,
  serverEndpoint,
  serverIndexLimits,
  withRetryable,
  type ServerCall,
  type ServerOptions,
} from './server-options';
import { fsError, isMissing, readSmallFile } from '../fs';
import {
  discardBody,
  errorBodyText,
  errorText,
  isOk,
  readJson,
  statusError,
  type HttpCallResponse,
} from '../net';

export interface TorchServeModelServerOptions extends ServerOptions {
  /**
   * TorchServe's `key_file.json` (its `management.key` is used) or a file holding just the token. Read on every
   * call, so a rotated key is picked up without a restart. Unset: no Authorization header (token auth disabled).
   */
  readonly tokenFile?: string;
}

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
  const { shown, timeoutMs, loadTimeoutMs, call: callServer } = serverEndpoint(options);
  const { tokenFile } = options;
  // The read under way, which every call waits for: on a hung mount it stays the only one (a thread each).
  let reading: Promise<string> | undefined;
  /** The token, read within the request timeout: calls run inside the load slot, held for good by a hung read. */
  const token = (file: string): Promise<string> => {
    reading ??= readToken(file).finally(() => (reading = undefined));
    return within(reading, timeoutMs, () => {
      throw retryableError(
        'timeout',
        `the TorchServe token file ${file} was not read within ${timeoutMs} ms (a hung mount?)`,
      );
    });
  };

  const call: ServerCall = async (method, path, what, ms, signal) => {
    const headers: Record<string, string> =
      tokenFile === undefined ? {} : { Authorization: `Bearer ${await token(tokenFile)}` };
    const result = await callServer(method, path, what, ms, signal, { headers });
    const { status } = result;
    if (status === 405 && method !== 'GET') {
      // TorchServe's model API off (`enable_model_api`, false by default): POST and DELETE /models are refused
      // with 405. Its config, not the model's files: a TorchServe restarted with it on takes the same files.
      const text = shownBody(await errorBodyText(result.body, ms));
      const message =
        `${what}: TorchServe's model API is off (${text}); set enable_model_api=true in its config.properties ` +
        '(or start it with --model-api-enabled): modelsync registers and unregisters models through it';
      throw withRetryable(httpStatusError(what, status), true, message);
    }
    // Every caller fails on 400 and 401 anyway; with a token file they may mean the key was rotated, without one
    // that TorchServe wants a key.
    if (status !== 400 && (tokenFile === undefined || status !== 401)) return result;
    // Within the network's bound for error bodies, not the call's (a register's is minutes).
    const text = shownBody(await errorBodyText(result.body, ms));
    if (tokenFile === undefined) {
      if (!tokenRejected.test(text)) throw notFromTorchServe(result, httpStatusError(what, status, text));
      // TorchServe's token authorization is on (its default since 0.11) and no key was sent: nothing of the model,
      // and no refusal for good (a TorchServe restarted with it off loads the same files), so ask again.
      const message =
        `${what}: TorchServe asks for a token (${text}) and no --torchserve-token-file is set; set it to ` +
        'its key_file.json, or turn its token authorization off';
      throw withRetryable(httpStatusError(what, status), true, message);
    }
    if (status === 401 || tokenRejected.test(text)) {
      // TorchServe keys expire and get replaced in the key file: the next attempt re-reads it, so retry.
      const message = `${what}: TorchServe rejected the token from ${tokenFile} (${text}); will re-read it`;
      throw withRetryable(httpStatusError(what, status), true, message);
    }
    throw notFromTorchServe(result, httpStatusError(what, status, text));
  };

  const unregister = async (name: ModelName, signal: AbortSignal): Promise<void> => {
    const what = `TorchServe unregister of "${name}" (${shown})`;
    const result = await call('DELETE', `/models/${encodeURIComponent(name)}`, what, timeoutMs, signal);
    const { status } = result;
    // Not a page's 404 (a proxy's with no route to TorchServe): the files would be deleted while it holds them.
    if (isOk(result) || (status === 404 && !isHtml(result))) return discardBody(result);
    // A page's error (a proxy's) is retried: this unregister may be a replacement's, inside the load.
    const error = notFromTorchServe(result, await statusError(result));
    // 409: an unregistration of this model is already in progress; it will be over by the next attempt.
    throw status === 409 ? withRetryable(error, true) : error;
  };

  return {
    load: async (name, replacing, signal) => {
      if (replacing) await unregister(name, signal);
      const what = `TorchServe register of "${name}" (${shown})`;
      const query = new URLSearchParams({
        url: name,
        model_name: name,
        initial_workers: '1',
        synchronous: 'true',
      });
      const result = await call('POST', `/models?${query.toString()}`, what, loadTimeoutMs, signal);
      const { status } = result;
      // 206 "Workers scaling in progress...": registered, fewer workers running than asked yet; TorchServe keeps it
      // (it unregisters a model only when its workers fail to start, with a 500) and restarts the workers.
      // A proxy's login page before TorchServe, which answers JSON: nothing registered.
      if ([200, 201, 202, 206].includes(status)) return notAPage(result, what, 'registered', 'TorchServe');
      // A page is no 409 of TorchServe's either: nothing says the model is registered.
      const error = notFromTorchServe(result, await statusError(result));
      if (status !== 409 || isHtml(result)) throw error;
      // Already registered: the wanted state, unless we just unregistered it and someone registered it again.
      if (!replacing) return;
      throw withRetryable(error, true, `${error.message} (right after unregistering it for the replacement)`);
    },

    unload: unregister,

    loadedModels: async (signal) => {
      const names = new Set<string>();
      let pageToken: string | undefined;
      const what = `TorchServe model list (${shown})`;
      // The whole listing within the request timeout, as one call is: a server handing out page after slow page
      // would otherwise hold a start or a resync for up to 1,000 pages of it.
      const deadline = performance.now() + timeoutMs;
      for (let page = 0; page < maxPages; page++) {
        const leftMs = Math.floor(deadline - performance.now());
        if (leftMs <= 0)
          throw retryableError(
            'timeout',
            `${what} still had more pages after ${timeoutMs} ms (${page} pages)`,
          );
        const query = new URLSearchParams({ limit: String(pageSize) });
        if (pageToken !== undefined) query.set('next_page_token', pageToken);
        const result = await call('GET', `/models?${query.toString()}`, what, leftMs, signal);
        if (!isOk(result)) throw await statusError(result);
        const body = await readJson(result, ListModelsResponse, 'a model list');
        for (const model of body.models) names.add(model.modelName);
        const next = body.nextPageToken;
        const last = next === undefined || next === null || String(next) === '' || String(next) === pageToken;
        if (last || names.size >= serverIndexLimits.maxModels) return loadedModelNames(names);
        pageToken = String(next);
      }
      throw retryableError('invalid-response', `${what} still had more pages after ${maxPages}`);
    },
  };
};

/**
 * The management token in `file`: `management.key` of TorchServe's key file, or the whole text; either trimmed
 * (`kubectl create secret --from-file`, `echo` and editors end a file in a newline). A missing, empty or
 * half-written file is retryable: TorchServe writes the key file when it starts. A token with whitespace or a
 * control character inside is refused, never sent: Node would throw on such a header, and no server issues one.
 */
const readToken = async (file: string): Promise<string> => {
  const what = `cannot read the TorchServe token file ${file}`;
  let text: string;
  try {
    // Bounded and a regular file only, as every token file: a FIFO there held a load (and a thread) for good.
    const shown = `the TorchServe token file ${file}`;
    text = (await readSmallFile(file, maxTokenFileBytes, shown, 'follow')).toString('utf8').trim();
  } catch (cause) {
    // Refused unread (not a regular file, too big): TorchServe may yet write its key file there.
    if (errorCode(cause) === undefined) throw retryableError('filesystem', errorMessage(cause), cause);
    // Missing is "not yet" here, whatever it means elsewhere: TorchServe writes the file when it starts.
    throw isMissing(cause) ? withRetryable(fsError(what, cause), true) : fsError(what, cause);
  }
  if (text === '') throw retryableError('filesystem', `the TorchServe token file ${file} is empty`);
  if (!text.startsWith('{')) {
    registerRotatingSecrets(file, [text]);
    return checkedToken(text, `the TorchServe token file ${file}`);
  }
  // Never quote the file or JSON.parse's message: it holds the keys.
  const json = parseJson(text);
  if (isLeft(json))
    throw retryableError(
      'filesystem',
      `the TorchServe token file ${file} is not valid JSON (being rewritten?)`,
    );
  registerKeys(file, json.right);
  const key = (json.right as { management?: { key?: unknown } } | null)?.management?.key;
  if (typeof key === 'string' && key.trim() !== '')
    return checkedToken(key, `the management.key of the TorchServe key file ${file}`);
  throw permanentError('not-found', `the TorchServe key file ${file} has no management.key`);
};

/**
 * `text` as a token, or a permanent failure saying what in `where` is wrong with it: `invalid-setting`, not
 * `refused`, which the loader takes at a load for the server's verdict on the files (the model stayed Failed once
 * the file was fixed). Registered by the caller as a rotating secret, not for good (registeredToken): TorchServe
 * rotates its keys, and each would stay hidden forever.
 */
const checkedToken = (text: string, where: string): string => {
  const token = sendableToken(text, where);
  if (isLeft(token)) throw permanentError('invalid-setting', token.left);
  return token.right;
};

/**
 * Registers every key of the key file `file` (`management`, `inference`, `API`): a server may echo any of them.
 * TorchServe rotates them: the keys of its last few reads stay hidden, older ones are dropped (registerRotating).
 */
const registerKeys = (file: string, keyFile: unknown): void => {
  if (typeof keyFile !== 'object' || keyFile === null) return;
  const keys = Object.values(keyFile as Record<string, unknown>)
    .map((entry) => (entry as { key?: unknown } | null)?.key)
    .filter((key): key is string => typeof key === 'string');
  registerRotatingSecrets(file, keys);
};

/**
 * `error` retried when its answer is a web page that is no gatekeeper's: a page before TorchServe (an ingress's 404
 * for a route not set up yet; TorchServe answers JSON) says nothing of the model's files, so it is no refusal of
 * them for good (the model was Failed, and the resync never retried it). As the V2 client does.
 */
const notFromTorchServe = (result: HttpCallResponse, error: EffectError): EffectError =>
  isHtml(result) && !isGatekeeperStatus(result.status)
    ? withRetryable(error, true, `${error.message} (an HTML page: not TorchServe's answer)`)
    : error;

/**
 * The server's reason in an error body, as much of it as `httpStatusError` quotes: each message goes into a log line
 * per retry and a model's /status reason, and a body (a proxy's page) may be 64 KiB.
 */
const shownBody = (body: string): string => errorText(body).slice(0, 300);

// TorchServe answers a missing or wrong key with 400 "Token Authorization failed..." (TokenAuthorizationHandler);
// a proxy in front would say 401. 403 is not one: TorchServe uses it for refused arguments.
const tokenRejected = /token (authorization|authentication) failed/i;
// A key file is a few hundred bytes; the cap of every token file modelsync reads.
const maxTokenFileBytes = 64 * 1024;
