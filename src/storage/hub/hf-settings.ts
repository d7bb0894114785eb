/**
 * hfSettingsFrom: the Hub's endpoint, token and offline switch, from the environment names huggingface_hub reads, and
 * the bound on one file's connections KServe's webhook sets for hf-xet; hfTokenFileOf: where its token file is.
 */
import { join } from 'node:path';
import * as E from 'fp-ts/Either';
import { bearerToken } from '../../core/bearer-token';
import type { Env } from '../../core/env';
import { hasUserInfo, registerSecret } from '../../core/redact';
import { homeDir } from '../../fs';

/** huggingface_hub's `_HF_DEFAULT_ENDPOINT` (constants.py). */
export const defaultHfEndpoint = 'https://huggingface.co';

/** Where the Hub is and how modelsync may use it. */
export interface HfSettings {
  /** `HF_ENDPOINT` without its trailing `/` (a mirror may have a path of its own). */
  readonly endpoint: string;
  /**
   * `HF_TOKEN` (else `HUGGING_FACE_HUB_TOKEN`), registered as a secret; absent: the token file's (`hfTokenFileOf`), if
   * any, else anonymous. Never with `HF_HUB_DISABLE_IMPLICIT_TOKEN`.
   */
  readonly token?: string;
  /** `HF_HUB_OFFLINE` (else `TRANSFORMERS_OFFLINE`) is true: no request may go to the Hub. */
  readonly offline: boolean;
  /**
   * `HF_XET_NUM_CONCURRENT_RANGE_GETS`: the most connections one file is fetched over (absent: no bound of its own).
   * hf-xet (1.1, what KServe 0.19's initializer runs) bounds one download's concurrent range GETs by it; KServe's
   * webhook sets it (8) in every storage initializer. Its later releases drop it for adaptive concurrency.
   */
  readonly streamsPerFile?: number;
}

/** Above what hf-xet's own high-performance default was (512), and any connection count that makes sense. */
const maxRangeGets = 4096;

// constants.py's `_is_true`.
const isTrue = (value: string | undefined): boolean =>
  value !== undefined && ['1', 'ON', 'YES', 'TRUE'].includes(value.toUpperCase());

/** The endpoint `text` names, or why it names none (never quoting it: a URL may carry user info). */
const endpointOf = (text: string): E.Either<string, string> => {
  const url = URL.parse(text);
  if (url === null) return E.left('HF_ENDPOINT is not a URL');
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return E.left('HF_ENDPOINT is not an http(s) URL');
  if (hasUserInfo(url)) {
    return E.left('HF_ENDPOINT must not carry user:password; put the token in HF_TOKEN');
  }
  if (url.search !== '' || url.hash !== '') return E.left('HF_ENDPOINT must not have a query or a fragment');
  // As constants.py: `os.getenv("HF_ENDPOINT", ...).rstrip("/")`.
  return E.right(url.href.replace(/\/+$/, ''));
};

/** `HF_XET_NUM_CONCURRENT_RANGE_GETS` as a bound: blank or 0 is none (hf-xet: 0 lifts its limit). */
const rangeGetsOf = (text: string | undefined): E.Either<string, number | undefined> => {
  const value = text?.trim() ?? '';
  const count = /^\d{1,4}$/.test(value) ? Number(value) : value === '' ? 0 : NaN;
  if (!(count >= 0 && count <= maxRangeGets)) {
    const shown = JSON.stringify(value.slice(0, 40)) + (value.length > 40 ? '…' : '');
    return E.left(
      `HF_XET_NUM_CONCURRENT_RANGE_GETS: expected a whole number from 0 to ${maxRangeGets}, got ${shown}`,
    );
  }
  return E.right(count === 0 ? undefined : count);
};

/**
 * `HF_HUB_DISABLE_IMPLICIT_TOKEN`: no token is sent unless the caller passes one, and KServe's initializer passes
 * snapshot_download none (huggingface_hub's `get_token_to_send`): neither the environment's nor the file's is sent.
 */
const implicitTokenDisabled = (env: Env): boolean => isTrue(env.HF_HUB_DISABLE_IMPLICIT_TOKEN);

/** A token as huggingface_hub's `_clean_token` cleans one (the environment's or its file's): CR and LF dropped, trimmed. */
export const cleanHfToken = (text: string): string => text.replace(/[\r\n]/g, '').trim();

/** The environment's token as `_get_token_from_environment` takes it: HF_TOKEN first, cleaned. */
const environmentToken = (env: Env): { readonly variable: string; readonly text: string } => {
  const variable = env.HF_TOKEN ? 'HF_TOKEN' : 'HUGGING_FACE_HUB_TOKEN';
  return { variable, text: cleanHfToken(env[variable] ?? '') };
};

/**
 * Python's `os.path.expandvars(os.path.expanduser(path))`, as constants.py expands its paths: a leading `~` is HOME,
 * `$NAME` and `${NAME}` the value in `env`, left as written when unset.
 */
const expandedPath = (path: string, env: Env): string => {
  const home = homeDir(env)?.replace(/\/+$/, '');
  const user =
    home !== undefined && (path === '~' || path.startsWith('~/')) ? home + path.slice(1) || '/' : path;
  return user.replace(/\$(\w+|\{[^}]*\})/g, (written, name: string) => {
    const value = env[name.startsWith('{') ? name.slice(1, -1) : name];
    return value ?? written;
  });
};

/**
 * The token file huggingface_hub reads when the environment holds no token (`_get_token_from_file`): `HF_TOKEN_PATH`,
 * else `token` in `HF_HOME`, whose default is `huggingface` in `XDG_CACHE_HOME`, else in `~/.cache`. Undefined when
 * the environment holds a token, or none may be sent (`implicitTokenDisabled`).
 */
export const hfTokenFileOf = (env: Env): string | undefined => {
  if (implicitTokenDisabled(env) || environmentToken(env).text !== '') return undefined;
  const cache = env.XDG_CACHE_HOME ?? join(expandedPath('~', env), '.cache');
  const hfHome = expandedPath(env.HF_HOME ?? join(cache, 'huggingface'), env);
  return expandedPath(env.HF_TOKEN_PATH ?? join(hfHome, 'token'), env);
};

/**
 * The Hub settings of `env`, as huggingface_hub reads them (the table: docs/storage.md, "Hugging Face Hub"); the
 * token as `_clean_token` cleans it (CR and LF dropped, trimmed, empty meaning none), registered as a secret before it
 * can reach any message. The Left names the variable that is wrong, never its value.
 */
export const hfSettingsFrom = (env: Env): E.Either<string, HfSettings> => {
  const endpoint = env.HF_ENDPOINT ? endpointOf(env.HF_ENDPOINT) : E.right(defaultHfEndpoint);
  if (E.isLeft(endpoint)) return endpoint;
  const { variable, text } = implicitTokenDisabled(env) ? { variable: '', text: '' } : environmentToken(env);
  if (text !== '') registerSecret(text);
  const token = text === '' ? undefined : bearerToken(text);
  if (token !== undefined && E.isLeft(token)) return E.left(`${variable} ${token.left}`);
  const streamsPerFile = rangeGetsOf(env.HF_XET_NUM_CONCURRENT_RANGE_GETS);
  if (E.isLeft(streamsPerFile)) return streamsPerFile;
  return E.right({
    endpoint: endpoint.right,
    token: token?.right,
    offline: isTrue(env.HF_HUB_OFFLINE || env.TRANSFORMERS_OFFLINE),
    streamsPerFile: streamsPerFile.right,
  });
};
