/** hfStorage: the StorageProvider for `hf://<owner>/<model>[:<revision>]`, over hubRepoClient — one Hub repo at one commit, its tree the listing, `/resolve/` the ranged read. */
import * as E from 'fp-ts/Either';
import { registeredToken } from '../../core/bearer-token';
import { errorCode, errorMessage, permanentError, retryableError } from '../../core/errors';
import { selectionKey } from '../../core/file-selection';
import { registerSecret } from '../../core/redact';
import type { StorageProvider } from '../../ports';
import { defaultDownloadLimits, type ListingCap } from '../download-limits';
import { fsError, isMissing, readSmallFile } from '../../fs';
import { discardBody, isOk, withFailures, type Network } from '../../net';
import { answerStatusError } from '../store-answer';
import { contentLengthOf, contentRangeOf, rangeAnswered } from '../http/resumable-body';
import { rangedFailure } from '../parts/fetch-parts';
import type { ObjectStoreClient, StoredObject } from '../object-store/client';
import {
  objectStoreStorage,
  type ObjectDownloadOptions,
  type ResolvedLocation,
} from '../object-store/download-objects';
import { hubRequest, listTree, pythonQuote, resolveCommit, type HubCommit, type HubReach } from './hub-api';
import { hubFileError, type HubFailure } from './hub-errors';
import { cleanHfToken, defaultHfEndpoint } from './hf-settings';
import { parseHfUri, type HfRepo } from './hf-uri';

/** How the Hub is reached, and the cap on what its tree may list. */
interface HubClientSettings extends HubReach {
  readonly listing: ListingCap;
}

/**
 * The bytes `[offset, end)` of a listed file, from `/resolve/<commit>/<path>` (huggingface_hub's hf_hub_url): a
 * `Range` for less than the whole, which must come back as exactly that 206. A 401, 403 or 404 is said for the Hub
 * (hubFileError); other bytes are a retryable `invalid-response` (the commit is pinned: nothing changed).
 */
const readFile = async (
  reach: HubReach,
  failure: HubFailure,
  gated: boolean,
  object: StoredObject,
  offset: number,
  signal: AbortSignal,
  end = object.size,
): Promise<AsyncIterable<Uint8Array>> => {
  const what = `${failure.what}: ${object.key}`;
  const url = new URL(
    `${reach.endpoint}/${failure.repo.repoId}/resolve/${object.version}/${pythonQuote(object.key)}`,
  );
  const ranged = offset > 0 || end < object.size;
  const range = ranged ? { range: `bytes=${offset}-${end - 1}` } : undefined;
  const { response, attempt } = await hubRequest(reach, what, url, signal, range);
  if (!isOk(response))
    throw hubFileError(failure, gated, object.key, await answerStatusError(what, response, reach.minRate));
  const answered = contentRangeOf(response.headers);
  const exact = ranged
    ? response.status === 206 &&
      answered?.first === offset &&
      answered.last === end - 1 &&
      answered.total === object.size
    : response.status === 200;
  if (!exact) {
    await discardBody(response);
    throw retryableError('invalid-response', rangeAnswered(what, [offset, end], response.status, answered));
  }
  const framed = !ranged || contentLengthOf(response.headers) !== undefined;
  return withFailures(attempt.watch(response.body), (cause) => rangedFailure(framed, attempt.failure(cause)));
};

/**
 * The client of `repo` for one download, as `snapshot_download` reads it (docs/storage.md, "Hugging Face Hub"): the
 * revision resolved to its commit, that commit's tree listed, and every file read at that commit.
 */
const hubRepoClient = (
  settings: HubClientSettings,
  repo: HfRepo,
  token: () => Promise<string | undefined>,
): ObjectStoreClient => {
  let reach = settings;
  let failure: HubFailure = {
    repo,
    what: `downloading ${repo.display}`,
    endpoint: reach.endpoint,
    withToken: reach.token !== undefined,
  };
  let commit: HubCommit = { sha: '', gated: false };
  const atCommit = (): HubFailure => ({ ...failure, what: `${failure.what} (commit ${commit.sha})` });
  return {
    repo: {
      identity: (select) => {
        const key = selectionKey(select);
        return `hf:${reach.endpoint}/${repo.repoId}@${commit.sha}${key === '' ? '' : ` ${key}`}`;
      },
    },
    async *list(_location, signal, bounds) {
      // The token of this download: a token file is read again at each one (a rotated token is used at once).
      reach = { ...settings, token: await token() };
      failure = { ...failure, withToken: reach.token !== undefined };
      commit = await bounds.ask(() => resolveCommit(reach, failure, repo, signal));
      // Each request through the store's pressure, as the objects of a bucket (ListingBounds.ask).
      yield* await listTree(reach, atCommit(), repo, commit.sha, signal, reach.listing, bounds.ask);
    },
    read: (_location, object, offset, signal, end) =>
      readFile(reach, atCommit(), commit.gated, object, offset, signal, end),
  };
};

/** What the provider needs; every field has a default. */
export interface HfStorageOptions extends ObjectDownloadOptions {
  /** `HF_ENDPOINT` (a mirror); default https://huggingface.co. */
  readonly endpoint?: string;
  /** `HF_TOKEN`: sent as `Authorization: Bearer` to the endpoint alone; registered as a secret. */
  readonly token?: string;
  /** Where the token is read from at each download when `token` is absent (`hfTokenFileOf`); a missing file: none. */
  readonly tokenFile?: string;
  /** `HF_HUB_OFFLINE`: every hf:// download fails for good, no request made (there is no Hub cache to read). */
  readonly offline?: boolean;
  /** Longest wait for an answer, and for the next bytes of its body (default 30 s). */
  readonly timeoutMs?: number;
  /** The connections (proxies, CAs); default undici's global pool, direct. */
  readonly network?: Network;
}

/** The most read of a token file: a Hub token is ~40 characters. */
const maxTokenFileBytes = 64 * 1024;

/**
 * The token in the file at `path`, as `_get_token_from_file` reads it (CR and LF dropped, trimmed, empty meaning
 * none; a missing file: none), registered as a secret. Only a regular file of at most 64 KiB, links followed (a
 * mounted Secret); one that cannot be read, or holds no token a header can carry, fails the download for good,
 * naming the file and never its content.
 */
const tokenFromFile = async (path: string): Promise<string | undefined> => {
  const what = `the Hugging Face token file ${path}`;
  const bytes = await readSmallFile(path, maxTokenFileBytes, what, 'follow').catch((cause: unknown) => {
    if (isMissing(cause)) return undefined;
    // Refused unread (not a regular file, too big): its words name the file.
    if (errorCode(cause) === undefined) throw permanentError('refused', errorMessage(cause), cause);
    throw fsError(`cannot read ${what}`, cause);
  });
  const text = cleanHfToken(bytes?.toString('utf8') ?? '');
  if (text === '') return undefined;
  const token = registeredToken(text, what);
  if (E.isLeft(token)) throw permanentError('refused', token.left);
  return token.right;
};

/**
 * Downloads Hugging Face Hub model repos as huggingface_hub's `snapshot_download` does (KServe's storage initializer
 * calls it for `hf://`): hubRepoClient under the one download engine (`maxResumes` default 5).
 */
export const hfStorage = (options: HfStorageOptions = {}): StorageProvider => {
  if (options.token !== undefined) registerSecret(options.token);
  const limits = options.limits ?? defaultDownloadLimits;
  const reach = {
    endpoint: (options.endpoint ?? defaultHfEndpoint).replace(/\/+$/, ''),
    token: options.token,
    network: options.network,
    minRate: limits.minRate,
    timeoutMs: options.timeoutMs ?? 30_000,
    listing: limits,
  };
  const resolve = (repo: HfRepo): ResolvedLocation => {
    if (options.offline === true) {
      throw permanentError(
        'refused',
        `downloading ${repo.display}: HF_HUB_OFFLINE is set, and modelsync keeps no Hub cache to read from`,
      );
    }
    const location = { bucket: repo.repoId, prefix: '', display: repo.display };
    const { token, tokenFile } = options;
    const tokenOf = async () => token ?? (tokenFile === undefined ? undefined : tokenFromFile(tokenFile));
    return { client: hubRepoClient(reach, repo, tokenOf), location };
  };
  return objectStoreStorage({
    maxResumes: 5,
    ...options,
    limits,
    schemes: ['hf'],
    resolve: (uri) => E.map(resolve)(parseHfUri(uri)),
  });
};
