/** hfStorage: the StorageProvider for `hf://<owner>/<model>[:<revision>]` — a Hugging Face Hub snapshot, every file from one commit. */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import * as E from 'fp-ts/Either';
import { permanentError, toEffectError } from '../../core/errors';
import { selectionKey } from '../../core/file-selection';
import { registerSecret } from '../../core/redact';
import type { DownloadProgress, DownloadRequest, StorageProvider } from '../../ports';
import { defaultDownloadLimits, type DownloadLimits } from '../download-limits';
import { forEachLimited, step } from '../../fs';
import type { Network } from '../../net';
import type { FetchHttpFile } from '../http/http-file';
import { modelTransfer } from '../model-transfer';
import { trackProgress } from '../transfer-progress';
import { listTree, pythonQuote, resolveCommit, type HubReach } from './hub-api';
import { hubFileError, type HubFailure } from './hub-errors';
import { planHubFiles, type PlannedHubFile } from './hub-plan';
import { defaultHfEndpoint } from './hf-settings';
import { parseHfUri } from './hf-uri';

/** What the provider needs; all but `fetchFile` have defaults. */
export interface HfStorageOptions {
  /** `HF_ENDPOINT` (a mirror); default https://huggingface.co. */
  readonly endpoint?: string;
  /** `HF_TOKEN`: sent as `Authorization: Bearer` to the endpoint alone; registered as a secret. */
  readonly token?: string;
  /** `HF_HUB_OFFLINE`: every hf:// download fails for good, no request made (there is no Hub cache to read). */
  readonly offline?: boolean;
  /** The model cap, file count and minimum rate (default: the flags' defaults). */
  readonly limits?: DownloadLimits;
  /** Longest wait for an API answer, and for the next bytes of its body (default 30 s). */
  readonly timeoutMs?: number;
  /** Files in flight at once (`--storage-concurrency`; default 8, snapshot_download's `max_workers`). */
  readonly concurrency?: number;
  /** The connections of the API requests (proxies, CAs); default undici's global pool, direct. */
  readonly network?: Network;
  /** Fetches each file (the wiring's http-file fetcher, on the same Network). */
  readonly fetchFile: FetchHttpFile;
}

type Settings = Required<Omit<HfStorageOptions, 'token' | 'network'>> & HubReach;

/** The identity a copy on disk must have to stand in: the endpoint, the repo, the commit and the selection. */
const identityOf = (endpoint: string, repoId: string, sha: string, request: DownloadRequest | undefined) => {
  const key = selectionKey(request?.select);
  return `hf:${endpoint}/${repoId}@${sha}${key === '' ? '' : ` ${key}`}`;
};

const download = async (
  settings: Settings,
  uri: string,
  targetDir: string,
  signal: AbortSignal,
  progress?: (progress: DownloadProgress) => void,
  request?: DownloadRequest,
): Promise<void> => {
  const parsed = parseHfUri(uri);
  if (E.isLeft(parsed)) throw permanentError('invalid-uri', parsed.left);
  const repo = parsed.right;
  const what = `downloading ${repo.display}`;
  if (settings.offline) {
    throw permanentError(
      'refused',
      `${what}: HF_HUB_OFFLINE is set, and modelsync keeps no Hub cache to read from`,
    );
  }
  const { limits, endpoint, token } = settings;
  const failure: HubFailure = { repo, what, endpoint, withToken: token !== undefined };
  const transfer = modelTransfer(what, targetDir, limits, signal, 8 * settings.concurrency);
  const { guard, signal: jobSignal } = transfer;
  let tracker: { readonly stop: () => void } | undefined;
  try {
    // The revision first, then the tree at that commit and each file at it: a push meanwhile changes nothing.
    const commit = await resolveCommit(settings, failure, repo, jobSignal);
    const atCommit = { ...failure, what: `${what} (commit ${commit.sha})` };
    const files = await listTree(settings, atCommit, repo, commit.sha, jobSignal, limits.maxModelFiles);
    const plan = planHubFiles(atCommit.what, files, request?.select);
    if ((await request?.reuse?.(identityOf(endpoint, repo.repoId, commit.sha, request))) === true) return;
    const totalBytes = plan.reduce((sum, file) => sum + file.size, 0);
    await guard.admit(totalBytes);
    tracker = trackProgress({
      bytes: () => guard.total,
      totalBytes: () => totalBytes,
      everyMs: limits.progressIntervalMs,
      report: progress,
    });
    const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
    const fetchOne = async (file: PlannedHubFile): Promise<void> => {
      const to = path.join(targetDir, file.to);
      await step(`${what}: cannot create ${path.dirname(to)}`, () =>
        mkdir(path.dirname(to), { recursive: true }),
      );
      await settings.fetchFile({
        // huggingface_hub's hf_hub_url: `{endpoint}/{repo_id}/resolve/{revision}/{quote(filename)}`.
        url: new URL(`${endpoint}/${repo.repoId}/resolve/${commit.sha}/${pythonQuote(file.path)}`),
        headers,
        to,
        what: `${atCommit.what}: ${file.path}`,
        signal: jobSignal,
        guard,
        expectedSize: file.size,
        ...(file.digest !== undefined ? { expectedDigest: file.digest } : {}),
      });
    };
    await forEachLimited(plan, settings.concurrency, async (file) => {
      try {
        await fetchOne(file);
      } catch (cause) {
        const error = hubFileError(atCommit, commit.gated, file.path, toEffectError(cause));
        transfer.stop(error);
        throw error;
      }
    });
  } catch (cause) {
    throw transfer.failure(cause);
  } finally {
    tracker?.stop();
  }
};

/**
 * Downloads Hugging Face Hub model repos as huggingface_hub's `snapshot_download` does (KServe's storage
 * initializer calls it for `hf://`): the revision (default `main`) resolved to its commit, the tree at that
 * commit listed with each file's size, the `select` patterns applied, and every file fetched from
 * `/resolve/<commit>/<path>` into the model dir at its path in the repo, at most `concurrency` at a time, through
 * one TransferGuard (the model cap on the listed sizes first, then on the bytes). The token goes to the
 * endpoint alone: an LFS file's redirect to the CDN gets none. Fails with hubStatusError's kinds (`not-found`,
 * `http-status`), the plan's (`refused`, `not-found`), `too-large`, `invalid-response`, the fetcher's and
 * `aborted`; nothing is cleaned up here (the store deletes its staging dir).
 */
export const hfStorage = (options: HfStorageOptions): StorageProvider => {
  if (options.token !== undefined) registerSecret(options.token);
  const limits = options.limits ?? defaultDownloadLimits;
  const settings: Settings = {
    endpoint: (options.endpoint ?? defaultHfEndpoint).replace(/\/+$/, ''),
    token: options.token,
    network: options.network,
    offline: options.offline ?? false,
    limits,
    minRate: limits.minRate,
    timeoutMs: options.timeoutMs ?? 30_000,
    concurrency: options.concurrency ?? 8,
    fetchFile: options.fetchFile,
  };
  return {
    schemes: ['hf'],
    download: (uri, targetDir, signal, progress, request) =>
      download(settings, uri, targetDir, signal, progress, request),
  };
};
