/** hfStorage: the StorageProvider for `hf://<owner>/<model>[:<revision>]` — a Hugging Face Hub snapshot, every file from one commit. */
import * as E from 'fp-ts/Either';
import { permanentError } from '../../core/errors';
import { registerSecret } from '../../core/redact';
import type { StorageProvider } from '../../ports';
import { defaultDownloadLimits } from '../download-limits';
import type { Network } from '../../net';
import {
  objectStoreStorage,
  type ObjectDownloadOptions,
  type ResolvedLocation,
} from '../object-store/download-objects';
import { hubRepoClient } from './hub-client';
import { defaultHfEndpoint } from './hf-settings';
import { parseHfUri, type HfRepo } from './hf-uri';

/** What the provider needs; every field has a default. */
export interface HfStorageOptions extends ObjectDownloadOptions {
  /** `HF_ENDPOINT` (a mirror); default https://huggingface.co. */
  readonly endpoint?: string;
  /** `HF_TOKEN`: sent as `Authorization: Bearer` to the endpoint alone; registered as a secret. */
  readonly token?: string;
  /** `HF_HUB_OFFLINE`: every hf:// download fails for good, no request made (there is no Hub cache to read). */
  readonly offline?: boolean;
  /** Longest wait for an answer, and for the next bytes of its body (default 30 s). */
  readonly timeoutMs?: number;
  /** The connections (proxies, CAs); default undici's global pool, direct. */
  readonly network?: Network;
}

/**
 * Downloads Hugging Face Hub model repos as huggingface_hub's `snapshot_download` does (KServe's storage
 * initializer calls it for `hf://`): every file of the revision's commit (hubRepoClient) through the one download
 * engine (downloadObjects; `maxResumes` default 5). The token goes to the endpoint alone. Fails with
 * hubStatusError's kinds, the engine's, and `invalid-response` (an answer that is not the file listed).
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
    return { client: hubRepoClient(reach, repo), location };
  };
  return objectStoreStorage({
    maxResumes: 5,
    ...options,
    limits,
    schemes: ['hf'],
    resolve: (uri) => E.map(resolve)(parseHfUri(uri)),
  });
};
