/** hubRepoClient: one Hub repo at one commit as an ObjectStoreClient — its tree the listing, `/resolve/` the ranged read. */
import type { ListingCap } from '../download-limits';
import { retryableError } from '../../core/errors';
import { selectionKey } from '../../core/file-selection';
import { discardBody, isOk, responseStatusError, withFailures } from '../../net';
import { contentRangeOf } from '../http/resumable-body';
import type { ObjectStoreClient, StoredObject } from '../object-store/client';
import { hubRequest, listTree, pythonQuote, resolveCommit, type HubCommit, type HubReach } from './hub-api';
import { hubFileError, type HubFailure } from './hub-errors';
import type { HfRepo } from './hf-uri';

/** How the Hub is reached, and the cap on what its tree may list. */
export interface HubClientSettings extends HubReach {
  readonly listing: ListingCap;
}

/**
 * The bytes `[offset, end)` of a listed file, from `/resolve/<commit>/<path>` (huggingface_hub's hf_hub_url): a
 * plain GET for the whole file, a `Range` for less, which must come back as exactly that 206. The token goes to the
 * endpoint alone (httpGet): an LFS file's redirect to the CDN gets none. A 401, 403 or 404 is said for the Hub
 * (hubFileError); an answer of other bytes is a retryable `invalid-response` (the commit is pinned: nothing changed).
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
    throw hubFileError(failure, gated, object.key, await responseStatusError(what, response));
  const answered = contentRangeOf(response.headers);
  const exact = ranged
    ? response.status === 206 &&
      answered?.first === offset &&
      answered.last === end - 1 &&
      answered.total === object.size
    : response.status === 200;
  if (!exact) {
    await discardBody(response);
    throw retryableError(
      'invalid-response',
      `${what}: bytes ${offset}-${end - 1} were answered ${response.status}` +
        `${answered !== undefined ? ` with bytes ${answered.first}-${answered.last} of ${answered.total ?? 'unknown'}` : ''}`,
    );
  }
  return withFailures(attempt.watch(response.body), (cause) => attempt.failure(cause));
};

/**
 * The client of `repo` for one download, as huggingface_hub's `snapshot_download` reads it: the listing resolves the
 * revision to its commit first (`resolveCommit`), then lists the tree at that commit (`listTree`, at most
 * `listing.maxModelFiles` files), and every file is read at that commit: a push meanwhile changes nothing. Each file carries
 * its size and the digest the tree gives (ContentCheck holds the bytes to both).
 */
export const hubRepoClient = (reach: HubClientSettings, repo: HfRepo): ObjectStoreClient => {
  const failure: HubFailure = {
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
    async *list(_location, signal) {
      commit = await resolveCommit(reach, failure, repo, signal);
      for (const file of await listTree(reach, atCommit(), repo, commit.sha, signal, reach.listing)) {
        yield { key: file.path, size: file.size, version: commit.sha, digest: file.digest };
      }
    },
    read: (_location, object, offset, signal, end) =>
      readFile(reach, atCommit(), commit.gated, object, offset, signal, end),
  };
};
