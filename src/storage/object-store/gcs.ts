/** gcsClient: Google Cloud Storage (`gs://bucket/prefix`) as an ObjectStoreClient: our JSON API requests, the SDK's credentials. */
import * as E from 'fp-ts/Either';
import { isRight } from 'fp-ts/Either';
import { EffectError, retryableError } from '../../core/errors';
import { storageRequestTries } from '../../core/retry-policy';
import { parseJson } from '../../core/json/json';
import { redactUri } from '../../core/storage-uri';
import { discardBody, transportError, type HttpCallResponse, type Network } from '../../net';
import type { StorageProvider } from '../../ports';
import { idleChunks } from './idle-watch';
import { rangedFailure } from '../parts/fetch-parts';
import {
  answerOf,
  defaultGcsEndpoint,
  gcsGet,
  GcsCredentials,
  type GcsGet,
  type GcsReach,
} from './gcs-requests';
import {
  rangeOf,
  type ObjectLocation,
  type ObjectStoreClient,
  type StoredObject,
  type ListingBounds,
} from './client';
import { invalidListing, pageObjects } from './listing-bounds';
import { jsonObject } from '../../core/json/json-object';
import { objectStoreStorage, type ObjectDownloadOptions } from './download-objects';
import { storeStatusError } from './store-error';
import { readAnswer } from '../store-answer';
import { defaultDownloadLimits, type MinRate } from '../download-limits';

/** How to reach GCS. */
export interface GcsClientOptions {
  /** The JSON API endpoint (an emulator, a private endpoint); default `https://storage.googleapis.com`. */
  readonly endpoint?: string;
  /** `GOOGLE_APPLICATION_CREDENTIALS`, read again when it changes; absent: as docs/storage.md, GCS "Credentials". */
  readonly credentialsFile?: string;
  /** Longest wait for an answer, and for the next bytes of a body, in ms (default 60 s). */
  readonly timeoutMs?: number;
  /** Immediate retries of a list page that failed retryably (default `storageRequestTries` - 1). */
  readonly requestRetries?: number;
  /** Objects asked for per list page (GCS answers at most 1,000). */
  readonly pageSize?: number;
  /** The connections (proxies, CA bundle, keep-alive); default undici's global pool, direct. */
  readonly network?: Network;
  /** The slowest a list page or an error answer may come; absent: no minimum (gcsStorage: `--min-download-rate`). */
  readonly minRate?: MinRate;
}

// GCS bucket names: 3–63 characters (222 with dots), lower-case letters, digits, `-`, `_` and `.`.
const bucketPattern = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;

/**
 * The bucket and prefix of `gs://bucket/prefix` (the prefix taken as written, not URL-decoded: object names may
 * hold `%`, `?` and `#`). The Left says what is wrong, showing the URI redacted.
 */
export const gcsLocation = (uri: string): E.Either<string, ObjectLocation> => {
  const display = redactUri(uri);
  const match = /^gs:\/\/([^/]*)\/?(.*)$/is.exec(uri);
  if (match === null) return E.left(`${display} is not a gs://bucket/prefix URI`);
  const [, bucket = '', prefix = ''] = match;
  if (!bucketPattern.test(bucket)) {
    // Not quoted: text before an `@` there is user info, maybe a password.
    return E.left(`${display}: the bucket is not a GCS bucket name (3–222 characters of a-z, 0-9, -, _, .)`);
  }
  return E.right({ bucket, prefix, display });
};

/** What a failed token request carries: the HTTP status as `status` or `code`, the server's words. */
interface AuthFailure {
  readonly code?: unknown;
  readonly status?: unknown;
  readonly message?: unknown;
  readonly response?: { readonly status?: unknown };
}

const statusOf = (failure: AuthFailure): number | undefined => {
  for (const value of [failure.code, failure.status, failure.response?.status]) {
    if (typeof value === 'number' && value >= 400 && value < 600) return value;
  }
  return undefined;
};

/** A failure as an EffectError: ours as it is, an abort, a refused token request by its status, else the transport's. */
const gcsError = (cause: unknown, what: string, phase: 'list' | 'read', signal: AbortSignal) => {
  if (cause instanceof EffectError) return cause;
  if (signal.aborted) return transportError(signal.reason, { what, aborted: true });
  const failure = (typeof cause === 'object' && cause !== null ? cause : {}) as AuthFailure;
  const status = statusOf(failure);
  const detail = typeof failure.message === 'string' ? failure.message : '';
  if (status !== undefined) return storeStatusError({ what, status, phase, detail });
  return transportError(cause, { what, aborted: false, connectionLost: phase === 'read' });
};

/** The JSON API URL of `path` under the endpoint (which may have a path of its own), with `query`. */
const apiUrl = (reach: GcsReach, path: string, query: Readonly<Record<string, string>>): URL => {
  const url = new URL(`${reach.base}/storage/v1/b/${path}`);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url;
};

/** One list page's JSON object, retried `reach.retries` times at once on a retryable failure (429, 5xx, a reset). */
const listPage = async (reach: GcsReach, get: GcsGet) => {
  for (let attempt = 0; ; attempt++) {
    try {
      const call = await gcsGet(reach, get);
      const page = await readAnswer(call.body, answerOf(reach, call, get.url));
      const json = parseJson(page.toString('utf8'));
      return isRight(json) ? jsonObject(json.right) : undefined;
    } catch (cause) {
      const error = gcsError(cause, get.what, 'list', get.signal);
      if (!error.retryable || get.signal.aborted || attempt >= reach.retries) throw error;
    }
  }
};

async function* listObjects(
  reach: GcsReach,
  pageSize: number,
  location: ObjectLocation,
  signal: AbortSignal,
  bounds: ListingBounds,
): AsyncGenerator<StoredObject> {
  const what = `listing ${location.display}`;
  let pageToken: string | undefined;
  do {
    const query = {
      prefix: location.prefix,
      maxResults: String(pageSize),
      ...(pageToken === undefined ? {} : { pageToken }),
    };
    const url = apiUrl(reach, `${encodeURIComponent(location.bucket)}/o`, query);
    const page = await listPage(reach, { url, what, phase: 'list', signal });
    if (page === undefined) throw invalidListing(what, 'the body is no JSON object');
    yield* pageObjects(what, 'items', page['items'] ?? [], bounds, (fields) => ({
      key: fields?.['name'],
      size: fields?.['size'],
      version: fields?.['generation'],
    }));
    const next = page['nextPageToken'];
    pageToken = typeof next === 'string' && next !== '' ? next : undefined;
    bounds.page(pageToken);
  } while (pageToken !== undefined);
}

async function* readObject(
  reach: GcsReach,
  location: ObjectLocation,
  object: StoredObject,
  offset: number,
  signal: AbortSignal,
  end = object.size,
): AsyncGenerator<Uint8Array> {
  if (offset >= end) return;
  const range = rangeOf(object, offset, end);
  const what = `reading gs://${location.bucket}/${object.key}`;
  // Pinned to the listed generation: a newer one answers 404, read as `changed`. Stored bytes, not transcoded
  // (`Accept-Encoding: gzip` keeps GCS from decompressing, and undici decodes nothing): offsets and sizes are the
  // stored object's.
  const url = apiUrl(reach, `${encodeURIComponent(location.bucket)}/o/${encodeURIComponent(object.key)}`, {
    alt: 'media',
    generation: object.version,
  });
  const headers = { 'accept-encoding': 'gzip', ...(range !== undefined ? { range } : {}) };
  let call: HttpCallResponse;
  try {
    call = await gcsGet(reach, { url, what, phase: 'read', headers, signal });
  } catch (cause) {
    throw gcsError(cause, what, 'read', signal);
  }
  if (range !== undefined && call.status !== 206) {
    await discardBody(call);
    throw retryableError('invalid-response', `${what}: HTTP ${call.status} to a ranged read, not 206`);
  }
  // The wait for bytes is timed here too, so a stalled body says so the same way whichever timer fires first.
  const framed = range === undefined || call.headers['content-length'] !== undefined;
  yield* idleChunks(call.body, reach.timeoutMs, what, signal, (cause) =>
    rangedFailure(framed, gcsError(cause, what, 'read', signal)),
  );
}

/**
 * GCS's JSON API, requests of our own through the Network (docs/storage.md, "GCS"); the SDK only supplies the
 * credentials, sent to the configured endpoint alone.
 */
export const gcsClient = (options: GcsClientOptions = {}): ObjectStoreClient => {
  const endpoint = options.endpoint ?? defaultGcsEndpoint;
  const reach: GcsReach = {
    credentials: new GcsCredentials({
      endpoint,
      ...(options.credentialsFile !== undefined ? { credentialsFile: options.credentialsFile } : {}),
    }),
    network: options.network,
    base: endpoint.replace(/\/+$/, ''),
    timeoutMs: options.timeoutMs ?? 60_000,
    retries: options.requestRetries ?? storageRequestTries - 1,
    minRate: options.minRate,
  };
  const pageSize = options.pageSize ?? 1000;
  return {
    list: (location, signal, bounds) => listObjects(reach, pageSize, location, signal, bounds),
    read: (location, object, offset, signal, end) =>
      Promise.resolve(readObject(reach, location, object, offset, signal, end)),
  };
};

/** How GCS is reached, and the downloader's settings. */
export type GcsStorageOptions = GcsClientOptions & ObjectDownloadOptions;

/** The StorageProvider for `gs://bucket/prefix`: gcsClient under the generic object downloader. */
export const gcsStorage = (options: GcsStorageOptions = {}): StorageProvider => {
  const client = gcsClient({ minRate: (options.limits ?? defaultDownloadLimits).minRate, ...options });
  return objectStoreStorage({
    ...options,
    schemes: ['gs'],
    resolve: (uri) => E.map((location: ObjectLocation) => ({ client, location }))(gcsLocation(uri)),
  });
};
