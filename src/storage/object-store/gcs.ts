/**
 * gcsClient: Google Cloud Storage (`gs://bucket/prefix`) as an ObjectStoreClient, by JSON API requests of modelsync's
 * own through the Network. The SDK supplies only the credentials (google-auth-library: ADC, a key file, workload
 * identity), sent to the configured endpoint alone: its own transport follows redirects keeping the token when only
 * the port or scheme changes.
 */
import * as E from 'fp-ts/Either';
import { EffectError, retryableError, retryAfterOf } from '../../core/errors';
import { storageRequestTries } from '../../core/retry-policy';
import { parseJson } from '../../core/json/json';
import { jsonObject } from '../../core/json/json-object';
import { redactUri } from '../../core/storage-uri';
import {
  discardBody,
  headerOf,
  httpCall,
  transportError,
  type HttpCallResponse,
  type Network,
} from '../../net';
import type { StorageProvider } from '../../ports';
import { idleChunks } from './idle-watch';
import { defaultGcsEndpoint, gcsAuthorization, statusOf, type AuthFailure } from './gcs-credentials';
import { rangedFailure } from '../parts/fetch-parts';
import {
  noBytes,
  rangeOf,
  type ObjectLocation,
  type ObjectStoreClient,
  type StoredObject,
  type ListingBounds,
} from './client';
import { invalidListing, pageObjects } from './listing-bounds';
import { objectStoreStorage, type ObjectDownloadOptions } from './download-objects';
import { storeStatusError } from './store-error';
import { answerTo, errorAnswerText, readAnswer } from '../store-answer';
import { isPushback } from '../store-pressure';
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

/** The API's own words in a JSON error body: `reason: message` (`notFound: The specified bucket does not exist.`). */
const apiErrorDetail = (body: string): string => {
  const parsed = parseJson(body);
  const fields = E.isRight(parsed) ? jsonObject(parsed.right) : undefined;
  if (fields === undefined) return body.trim();
  // `{"error": null}` or a number: no object to read a message from (a proxy's or a broken answer's).
  const error = jsonObject(fields['error']);
  if (error === undefined) {
    const text = fields['error_description'] ?? fields['error'];
    return typeof text === 'string' ? text : body.trim();
  }
  const message = typeof error['message'] === 'string' ? error['message'] : '';
  const first: unknown = Array.isArray(error['errors']) ? error['errors'][0] : undefined;
  const reason = jsonObject(first)?.['reason'];
  return typeof reason === 'string' && !message.includes(reason) ? `${reason}: ${message}` : message;
};

/** One GET of the JSON API. */
interface GcsGet {
  readonly url: URL;
  readonly what: string;
  readonly phase: 'list' | 'read';
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
}

/** The ObjectStoreClient of GCS's JSON API (docs/storage.md, "GCS"). */
export const gcsClient = (options: GcsClientOptions = {}): ObjectStoreClient => {
  const endpoint = options.endpoint ?? defaultGcsEndpoint;
  const { network, minRate, timeoutMs = 60_000, pageSize = 1000 } = options;
  const retries = options.requestRetries ?? storageRequestTries - 1;
  const authorizationFor = gcsAuthorization(
    endpoint,
    options.credentialsFile,
    network === undefined ? undefined : (url) => network.agentFor(url),
  );

  /** The JSON API URL of `path` under the endpoint (which may have a path of its own), with `query`. */
  const apiUrl = (path: string, query: Readonly<Record<string, string>>): URL => {
    const url = new URL(`${endpoint.replace(/\/+$/, '')}/storage/v1/b/${path}`);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url;
  };

  /** How readAnswer reads the answer `call` to `url`: the cap of one answer, the minimum rate. */
  const answerOf = (call: HttpCallResponse, url: URL) => ({
    what: answerTo('GCS', 'GET', url),
    contentLength: call.headers['content-length'],
    minRate,
  });

  /**
   * Sends `get` with the credentials its URL may have, through the network (its proxy, CAs, keep-alive). A
   * redirect is refused, not followed: no GCS API answers one, and credentials must not go where it points.
   */
  const send = async ({ url, what, phase, headers, signal }: GcsGet): Promise<HttpCallResponse> => {
    const authorization = await authorizationFor(url);
    const call = await httpCall(url.href, {
      method: 'GET',
      what,
      timeoutMs,
      signal,
      headers: { ...headers, ...authorization },
      ...(network !== undefined ? { dispatcher: network.dispatcherFor(url) } : {}),
    });
    if (call.status >= 300 && call.status < 400) {
      await discardBody(call);
      const detail = 'a redirect, not followed (the credentials go only to the GCS endpoint)';
      throw storeStatusError({ what, status: call.status, phase, detail });
    }
    if (call.status >= 400) {
      const detail = apiErrorDetail(await errorAnswerText(call.body, answerOf(call, url)));
      const retryAfterMs = retryAfterOf(headerOf(call.headers, 'retry-after'));
      throw storeStatusError({ what, status: call.status, phase, detail, retryAfterMs });
    }
    return call;
  };

  /**
   * One list page's JSON object, retried `retries` times at once on a retryable failure (a 5xx, a reset) but a
   * push-back (429, 503): that one is the store's pressure's to wait out (ListingBounds.ask), never asked at once.
   */
  const listPage = async (get: GcsGet) => {
    for (let attempt = 0; ; attempt++) {
      try {
        const call = await send(get);
        const page = await readAnswer(call.body, answerOf(call, get.url));
        const json = parseJson(page.toString('utf8'));
        return E.isRight(json) ? jsonObject(json.right) : undefined;
      } catch (cause) {
        const error = gcsError(cause, get.what, 'list', get.signal);
        if (!error.retryable || isPushback(error) || get.signal.aborted || attempt >= retries) throw error;
      }
    }
  };

  async function* list(
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
      const url = apiUrl(`${encodeURIComponent(location.bucket)}/o`, query);
      const page = await bounds.ask(() => listPage({ url, what, phase: 'list', signal }));
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

  const read: ObjectStoreClient['read'] = async (location, object, offset, signal, end = object.size) => {
    if (offset >= end) return noBytes();
    const range = rangeOf(object, offset, end);
    const what = `reading gs://${location.bucket}/${object.key}`;
    // Pinned to the listed generation: a newer one answers 404, read as `changed`. Stored bytes, not transcoded
    // (`Accept-Encoding: gzip` keeps GCS from decompressing, and undici decodes nothing): offsets and sizes are the
    // stored object's.
    const url = apiUrl(`${encodeURIComponent(location.bucket)}/o/${encodeURIComponent(object.key)}`, {
      alt: 'media',
      generation: object.version,
    });
    const headers = { 'accept-encoding': 'gzip', ...(range !== undefined ? { range } : {}) };
    const call = await send({ url, what, phase: 'read', headers, signal }).catch((cause: unknown) => {
      throw gcsError(cause, what, 'read', signal);
    });
    if (range !== undefined && call.status !== 206) {
      await discardBody(call);
      throw retryableError('invalid-response', `${what}: HTTP ${call.status} to a ranged read, not 206`);
    }
    // The wait for bytes is timed here too, so a stalled body says so the same way whichever timer fires first.
    const framed = range === undefined || call.headers['content-length'] !== undefined;
    return idleChunks(call.body, timeoutMs, what, signal, (cause) =>
      rangedFailure(framed, gcsError(cause, what, 'read', signal)),
    );
  };

  // An emulator or private endpoint is another store than GCS for the same gs:// URI (ObjectStoreClient.store).
  return { list, read, ...(options.endpoint === undefined ? {} : { store: options.endpoint }) };
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
