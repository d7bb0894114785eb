/** The Hub's API as huggingface_hub's snapshot_download calls it: a revision resolved to its commit, then that commit's file tree, page by page. */
import * as E from 'fp-ts/Either';
import { sameEndpoint } from '../../core/endpoint';
import { permanentError, retryableError, retryAfterOf, type EffectError } from '../../core/errors';
import { hasLoneSurrogate, parseJson } from '../../core/json/json';
import { jsonObject } from '../../core/json/json-object';
import { tooLarge, type ListingCap, type MinRate } from '../download-limits';
import { errorText, httpUrl, isOk, timeoutOf, transportError, type Network } from '../../net';
import { Attempt, httpGet } from '../http/http-get';
import { headerOf } from '../../net';
import type { BodyResponse } from '../http/resumable-body';
import { answerTo, errorAnswerText, readAnswer } from '../store-answer';
import type { ContentDigest } from '../listed-content';
import type { ListingBounds, StoredObject } from '../object-store/client';
import { pageTokenCheck } from '../object-store/listing-bounds';
import { hubStatusError, type HubFailure } from './hub-errors';
import type { HfRepo } from './hf-uri';

/** How the API is reached. */
export interface HubReach {
  /** `HF_ENDPOINT`, without a trailing `/`. */
  readonly endpoint: string;
  readonly token: string | undefined;
  readonly network: Network | undefined;
  /** Longest wait for an answer, and for the next bytes of its body. */
  readonly timeoutMs: number;
  /** The slowest an answer may come (`--min-download-rate` over its window); absent: no minimum. */
  readonly minRate?: MinRate | undefined;
}

/** A revision resolved: its commit, and whether the repo is gated (its files then need a granted token). */
export interface HubCommit {
  readonly sha: string;
  readonly gated: boolean;
}

// Pages with nothing in them and still a next one, before the paging is not believed.
const maxEmptyPages = 10;
// Git trees name each directory once and hold no empty ones: a tree has fewer directories than files.
const entriesPerFile = 2;

/** The `REGEX_COMMIT_HASH` of huggingface_hub's file_download.py. */
export const commitPattern = /^[0-9a-f]{40}$/;

/**
 * Python's `urllib.parse.quote(text, safe)` for `safe` `/` (its default) or none: every byte but letters, digits,
 * `_.-~` (and `/`) percent-encoded; encodeURIComponent leaves `!'()*` too.
 */
export const pythonQuote = (text: string, safe: '/' | '' = '/'): string =>
  encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replaceAll('%2F', safe === '/' ? '/' : '%2F');

/** The `permanent` invalid-response failure of `what`: the Hub answered something the API never says. */
const notTheApi = (what: string, why: string): EffectError =>
  permanentError('invalid-response', `${what}: the Hub's answer is not what its API sends: ${why}`);

/**
 * GET `url` by httpGet: redirects followed by hand (a renamed repo answers a relative one), HF_TOKEN sent to the
 * endpoint alone, one timeout for the answer and for each wait for bytes. A transport failure is said by the
 * request's Attempt, returned for the body's reader; it runs on the caller's signal alone.
 */
export const hubRequest = async (
  reach: HubReach,
  what: string,
  url: URL,
  signal: AbortSignal,
  headers?: Readonly<Record<string, string>>,
): Promise<{ readonly response: BodyResponse; readonly attempt: Attempt }> => {
  const settings = {
    connectTimeoutMs: reach.timeoutMs,
    idleTimeoutMs: reach.timeoutMs,
    network: reach.network,
  };
  const attempt = new Attempt(what, signal, settings);
  attempt.dispose();
  const token: Record<string, string> =
    reach.token === undefined ? {} : { authorization: `Bearer ${reach.token}` };
  const response = await httpGet(url, settings, what, signal, token, headers).catch((cause: unknown) => {
    throw attempt.failure(cause);
  });
  return { response, attempt };
};

/** How readAnswer reads the Hub's answer `response` to `url`. */
const answerOf = (reach: HubReach, response: BodyResponse, url: URL) => ({
  what: answerTo('the Hub', 'GET', url),
  contentLength: headerOf(response.headers, 'content-length'),
  minRate: reach.minRate,
});

/**
 * The JSON of the API's answer to `url`, read bounded (readAnswer); an error answer is thrown as hubStatusError
 * reads it, and one that is not JSON at all is retryable (a proxy's page), as for every API.
 */
const hubJson = async (
  reach: HubReach,
  failure: HubFailure,
  url: URL,
  signal: AbortSignal,
): Promise<{ readonly json: unknown; readonly response: BodyResponse }> => {
  const { what } = failure;
  const { response } = await hubRequest(reach, what, url, signal, { accept: 'application/json' });
  if (!isOk(response)) {
    const body = await errorAnswerText(response.body, answerOf(reach, response, url));
    // A redirect off the endpoint took no token with it: the blame is said as for no token.
    const withToken = failure.withToken && sameEndpoint(response.url ?? url, reach.endpoint);
    throw hubStatusError(
      { ...failure, withToken },
      {
        status: response.status,
        code: headerOf(response.headers, 'x-error-code'),
        message: headerOf(response.headers, 'x-error-message') ?? errorText(body),
        retryAfterMs: retryAfterOf(headerOf(response.headers, 'retry-after')),
      },
    );
  }
  const bytes = await readAnswer(response.body, answerOf(reach, response, url)).catch((cause: unknown) => {
    const stalled = timeoutOf(cause) !== undefined;
    throw transportError(cause, {
      what,
      aborted: signal.aborted,
      timeout: stalled ? `timed out: no data received for ${reach.timeoutMs} ms` : undefined,
      connectionLost: true,
    });
  });
  const json = parseJson(bytes.toString('utf8'));
  if (E.isLeft(json)) throw retryableError('invalid-response', `${what}: the Hub's answer is not JSON`);
  return { json: json.right, response };
};

/**
 * `repo`'s revision resolved to its commit, as `repo_info` does it: `GET /api/models/{repo}/revision/{revision}`
 * (the revision URL-quoted), whose `sha` must be a 40-hex commit (and the commit itself when one was asked for).
 */
export const resolveCommit = async (
  reach: HubReach,
  failure: HubFailure,
  repo: HfRepo,
  signal: AbortSignal,
): Promise<HubCommit> => {
  const url = new URL(
    `${reach.endpoint}/api/models/${repo.repoId}/revision/${pythonQuote(repo.revision, '')}`,
  );
  const { json } = await hubJson(reach, failure, url, signal);
  const { sha, gated } = jsonObject(json) ?? {};
  if (typeof sha !== 'string' || !commitPattern.test(sha))
    throw notTheApi(failure.what, 'it names no 40-hex commit sha');
  if (commitPattern.test(repo.revision) && sha !== repo.revision) {
    throw notTheApi(failure.what, `commit ${repo.revision} resolved to another commit, ${sha}`);
  }
  return { sha, gated: gated !== undefined && gated !== false && gated !== null };
};

const sizeOf = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/**
 * The digest a tree entry gives of its bytes: an LFS file's `lfs.oid` (sha256), a git file's `oid` (its blob id);
 * none when the field is not of its shape (a mirror that leaves it out, or fills it otherwise, gets the size check
 * alone).
 */
const digestOf = (
  oid: unknown,
  lfs: Readonly<Record<string, unknown>> | undefined,
): ContentDigest | undefined => {
  const [hex, algorithm, digits] =
    lfs !== undefined ? ([lfs['oid'], 'sha256', 64] as const) : ([oid, 'git-blob-sha1', 40] as const);
  const valid = typeof hex === 'string' && hex.length === digits && /^[0-9a-f]+$/.test(hex);
  return valid ? { algorithm, hex } : undefined;
};

/**
 * The file of tree entry `index` at commit `sha`: its path in the repo, its size (the LFS object's for LFS files) and
 * its digest when the tree gives one; undefined for a directory; anything else the API never sends is refused.
 */
const fileOf = (what: string, index: number, entry: unknown, sha: string): StoredObject | undefined => {
  const { type, path, size, lfs, oid } = jsonObject(entry) ?? {};
  if (typeof path !== 'string' || path === '') throw notTheApi(what, `tree entry ${index} has no path`);
  if (hasLoneSurrogate(path)) throw notTheApi(what, `tree entry ${index} has a path that is no valid text`);
  if (type === 'directory') return undefined;
  const refuse = (why: string) =>
    notTheApi(what, `tree entry ${index} (${JSON.stringify(path.slice(0, 200))}) ${why}`);
  if (type !== 'file') throw refuse('is no file or directory');
  const lfsFields = typeof lfs === 'object' && lfs !== null ? (lfs as Record<string, unknown>) : undefined;
  const bytes = sizeOf(lfsFields?.['size']) ?? sizeOf(size);
  if (bytes === undefined) throw refuse('has no size in bytes');
  return { key: path, size: bytes, version: sha, digest: digestOf(oid, lfsFields) };
};

/** The `rel="next"` URL of a `Link` header (GitHub's format, as requests' `response.links` reads it). */
const nextLink = (link: string | undefined): string | undefined => {
  for (const part of (link ?? '').split(/,\s*(?=<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/s.exec(part);
    if (match !== null && /;\s*rel\s*=\s*"?next"?(?:[;\s]|$)/i.test(match[2]!)) return match[1];
  }
  return undefined;
};

/**
 * The files of `repo` at `sha`, as `list_repo_tree(recursive=True)` lists them, each `Link: <...>; rel="next"` page
 * followed. Past `cap.maxModelFiles` files: `too-large`; paging off the endpoint or in a circle, too many empty
 * pages, an entry without a path or a size: `invalid-response`; all permanent. Each page is asked through `ask`
 * (the store's pressure).
 */
export const listTree = async (
  reach: HubReach,
  failure: HubFailure,
  repo: HfRepo,
  sha: string,
  signal: AbortSignal,
  cap: ListingCap,
  ask: ListingBounds['ask'],
): Promise<ReadonlyArray<StoredObject>> => {
  const { what } = failure;
  const maxFiles = cap.maxModelFiles;
  const files: StoredObject[] = [];
  const checkNext = pageTokenCheck(what);
  let pages = 0;
  let entries = 0;
  let emptyPages = 0;
  let next: URL | undefined = new URL(
    `${reach.endpoint}/api/models/${repo.repoId}/tree/${sha}?recursive=true&expand=false`,
  );
  checkNext(pages, next.href);
  while (next !== undefined) {
    pages++;
    const url = next;
    const { json: page, response } = await ask(() => hubJson(reach, failure, url, signal));
    const link = nextLink(headerOf(response.headers, 'link'));
    if (!Array.isArray(page)) throw notTheApi(what, 'a tree page is no JSON array');
    for (const entry of page) {
      const file = fileOf(what, entries++, entry, sha);
      if (file !== undefined) files.push(file);
      if (files.length > maxFiles || entries > entriesPerFile * maxFiles + 1) {
        throw tooLarge(what, `its tree lists more than ${maxFiles} files`, 'maxModelFiles', cap.names);
      }
    }
    emptyPages = page.length === 0 ? emptyPages + 1 : 0;
    if (link === undefined) return files;
    next = httpUrl(link, `${what}: next page`, next);
    if (!sameEndpoint(next, reach.endpoint)) throw notTheApi(what, 'a next page is off the endpoint');
    checkNext(pages, next.href);
    if (emptyPages > maxEmptyPages)
      throw notTheApi(what, `${emptyPages} empty pages in a row, and still a next one`);
  }
  return files;
};
