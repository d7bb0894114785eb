/** gcsClient: Google Cloud Storage (`gs://bucket/prefix`) as an ObjectStoreClient, over @google-cloud/storage. */
import { stat } from 'node:fs/promises';
import type { Storage, StorageOptions } from '@google-cloud/storage';
import * as E from 'fp-ts/Either';
import { errorCode } from '../../core/errors';
import { redactUri } from '../../core/storage-uri';
import { transportError } from '../../net';
import { idleWatch } from './idle-watch';
import { lazyModule } from '../../core/lazy-module';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first gs:// model (lazy-module.ts) */
const gcsSdk = lazyModule(() => require('@google-cloud/storage') as typeof import('@google-cloud/storage'));
import type { StorageProvider } from '../../ports';
import type { ObjectLocation, ObjectStoreClient, StoredObject, ListingBounds } from './client';
import { fieldsOf, invalidListing, storedObject } from './listing-bounds';
import { objectStoreStorage, type ObjectDownloadOptions } from './download-objects';
import { storeStatusError } from './store-error';

/** How to reach GCS. */
export interface GcsClientOptions {
  /** The JSON API endpoint (an emulator, a private endpoint); default `https://storage.googleapis.com`. */
  readonly endpoint?: string;
  /**
   * A credentials file (`GOOGLE_APPLICATION_CREDENTIALS`: a service account key, an external account of workload
   * identity federation): read again when it changes. Without one, application default credentials (the metadata
   * server of GKE workload identity), and anonymous access when there are none; against a custom `endpoint`,
   * anonymous unless a file is given.
   */
  readonly credentialsFile?: string;
  /** Longest wait for an answer, and for the next bytes of a body, in ms (default 60 s). */
  readonly timeoutMs?: number;
  /**
   * Retries of a failed request the SDK makes itself (default 0: the loader's backoff retries). Its retries cannot
   * be aborted: their timers outlive an aborted download.
   */
  readonly sdkRetries?: number;
  /** Objects asked for per list page (GCS answers at most 1,000). */
  readonly pageSize?: number;
  /**
   * The proxy for a request to a URL (the Network's rule: `HTTPS_PROXY`, `NO_PROXY`). The SDK takes no agent, only
   * a proxy per request; where this says none, the SDK still applies its own reading of the proxy variables.
   */
  readonly proxyFor?: (url: URL) => URL | undefined;
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

type Interceptor = NonNullable<StorageOptions['interceptors_']>[number];
type RequestOptions = Parameters<Interceptor['request']>[0];

/** The Storage client for the current credentials file, made again when the file changes (a rotated key). */
class StorageHolder {
  private current: { readonly storage: Storage; readonly version: string } | undefined;

  constructor(private readonly options: GcsClientOptions) {}

  async get(): Promise<Storage> {
    const version = await this.fileVersion();
    if (this.current?.version !== version) this.current = { storage: this.make(), version };
    return this.current.storage;
  }

  /** The storage client to read with: the one the listing used. */
  now(): Storage {
    return this.current?.storage ?? (this.current = { storage: this.make(), version: '' }).storage;
  }

  private async fileVersion(): Promise<string> {
    const file = this.options.credentialsFile;
    if (file === undefined) return '';
    // A missing file is the SDK's to report (it names the file); a changed one is a new client.
    const stats = await stat(file).catch(() => undefined);
    return stats === undefined ? 'missing' : `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  }

  private make(): Storage {
    const { endpoint, credentialsFile, timeoutMs, sdkRetries = 0, proxyFor } = this.options;
    // The request is already decorated here (its `uri` absolute): the type says less than the SDK gives.
    const viaProxy = (request: RequestOptions): ReturnType<Interceptor['request']> => {
      const decorated = request as ReturnType<Interceptor['request']>;
      const proxy = proxyFor?.(new URL(decorated.uri));
      return proxy === undefined ? decorated : { ...decorated, proxy: proxy.href };
    };
    return new (gcsSdk().Storage)({
      ...(proxyFor !== undefined ? { interceptors_: [{ request: viaProxy }] } : {}),
      ...(endpoint !== undefined ? { apiEndpoint: endpoint } : {}),
      ...(credentialsFile !== undefined
        ? { keyFilename: credentialsFile, useAuthWithCustomEndpoint: true }
        : {}),
      ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
      // `maxRetries: 0` would mean the default (3): no retries is `autoRetry: false`.
      retryOptions: sdkRetries > 0 ? { autoRetry: true, maxRetries: sdkRetries } : { autoRetry: false },
    });
  }
}

/** What a failed SDK call carries: the HTTP status as `code` (ApiError) or `status` (a token exchange). */
interface SdkFailure {
  readonly code?: unknown;
  readonly status?: unknown;
  readonly message?: unknown;
  readonly errors?: ReadonlyArray<{ readonly reason?: unknown }>;
  readonly response?: { readonly status?: unknown };
}

/** The API's own words: a JSON error body's `error.message` (a failed media read has the body as its message). */
const detailOf = (failure: SdkFailure): string => {
  const message = typeof failure.message === 'string' ? failure.message : '';
  let text = message;
  try {
    const body = JSON.parse(message) as {
      error?: { message?: unknown } | string;
      error_description?: unknown;
    };
    const inner =
      typeof body.error === 'object' ? body.error.message : (body.error_description ?? body.error);
    if (typeof inner === 'string') text = inner;
  } catch {
    // Not JSON: the message as it is.
  }
  const reason = failure.errors?.[0]?.reason;
  return typeof reason === 'string' && !text.includes(reason) ? `${reason}: ${text}` : text;
};

const statusOf = (failure: SdkFailure): number | undefined => {
  for (const value of [failure.code, failure.status, failure.response?.status]) {
    if (typeof value === 'number' && value >= 400 && value < 600) return value;
  }
  return undefined;
};

/** Any failure of the SDK as an EffectError: an answer by its status, an abort, else the transport's. */
const gcsError = (cause: unknown, what: string, phase: 'list' | 'read', signal: AbortSignal) => {
  // Only our signal makes an abort ours: the SDK reports a body whose connection dropped as an AbortError too.
  if (signal.aborted) return transportError(signal.reason, { what, aborted: true });
  const failure = (typeof cause === 'object' && cause !== null ? cause : {}) as SdkFailure;
  const status = statusOf(failure);
  if (status !== undefined) return storeStatusError({ what, status, phase, detail: detailOf(failure) });
  // node-fetch's body failures carry no status: a connection reset mid-body, a premature close.
  const lost = errorCode(cause) === 'ERR_STREAM_PREMATURE_CLOSE' || phase === 'read';
  return transportError(cause, { what, aborted: false, connectionLost: lost });
};

/** Rejects as soon as `signal` aborts (the SDK's list calls take no signal). */
const unlessAborted = <T>(promise: Promise<T>, signal: AbortSignal): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });

async function* listObjects(
  holder: StorageHolder,
  pageSize: number,
  location: ObjectLocation,
  signal: AbortSignal,
  bounds: ListingBounds,
): AsyncGenerator<StoredObject> {
  const what = `listing ${location.display}`;
  let pageToken: string | undefined;
  let index = 0;
  do {
    let page: Readonly<Record<string, unknown>> | undefined;
    try {
      const storage = await holder.get();
      // The JSON API's answer as it came (the SDK's authenticated request, not getFiles): getFiles makes a File
      // of each item inside its own callback, where an item that is null or no object throws out of reach.
      const query = {
        prefix: location.prefix,
        maxResults: pageSize,
        ...(pageToken === undefined ? {} : { pageToken }),
      };
      const [body] = (await unlessAborted(
        storage.bucket(location.bucket).request({ uri: '/o', qs: query }),
        signal,
      )) as unknown as [unknown];
      page = fieldsOf(body);
    } catch (cause) {
      throw gcsError(cause, what, 'list', signal);
    }
    if (page === undefined) throw invalidListing(what, 'the body is no JSON object');
    const items = page['items'] ?? [];
    if (!Array.isArray(items)) throw invalidListing(what, 'its items are not a list');
    for (const item of items) {
      const fields = fieldsOf(item);
      const object = storedObject(what, index++, {
        key: fields?.['name'],
        size: fields?.['size'],
        version: fields?.['generation'],
      });
      bounds.object();
      yield object;
    }
    const next = page['nextPageToken'];
    pageToken = typeof next === 'string' && next !== '' ? next : undefined;
    bounds.page(pageToken);
  } while (pageToken !== undefined);
}

async function* readObject(
  holder: StorageHolder,
  idleMs: number,
  location: ObjectLocation,
  object: StoredObject,
  offset: number,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  if (offset >= object.size) return;
  const what = `reading gs://${location.bucket}/${object.key}`;
  const file = holder.now().bucket(location.bucket).file(object.key, { generation: object.version });
  // Pinned to the listed generation: a newer one answers 404, read as `changed`. Stored bytes, not transcoded:
  // offsets and sizes are the stored object's.
  const stream = file.createReadStream({
    validation: false,
    decompress: false,
    ...(offset > 0 ? { start: offset } : {}),
  });
  const onAbort = (): void => void stream.destroy(signal.reason as Error);
  signal.addEventListener('abort', onAbort, { once: true });
  // The SDK's fetch never ends a body whose connection closed early (node-fetch 2 with a Content-Length): a
  // body that sends nothing for `idleMs` is failed here. Only the wait for bytes counts, not our writes.
  const idle = idleWatch(idleMs, () => stream.destroy());
  try {
    if (signal.aborted) onAbort();
    const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    for (
      let next = await idle.wait(chunks.next());
      next.done !== true;
      next = await idle.wait(chunks.next())
    ) {
      yield next.value;
    }
  } catch (cause) {
    const timeout = idle.fired ? `timed out: no data received for ${idleMs} ms` : undefined;
    throw timeout === undefined
      ? gcsError(cause, what, 'read', signal)
      : transportError(cause, { what, aborted: false, timeout });
  } finally {
    signal.removeEventListener('abort', onAbort);
    stream.destroy();
  }
}

/**
 * GCS through `@google-cloud/storage`: lists with `prefix` and `pageToken` page by page; reads the listed
 * generation (`generation=`), from an offset with a `Range` header, never transcoded. Statuses as
 * storeStatusError reads them; connection failures retryable; proxies from `HTTPS_PROXY`/`NO_PROXY` (the SDK's
 * own handling: it takes no agent).
 */
export const gcsClient = (options: GcsClientOptions = {}): ObjectStoreClient => {
  const holder = new StorageHolder(options);
  const pageSize = options.pageSize ?? 1000;
  return {
    list: (location, signal, bounds) => listObjects(holder, pageSize, location, signal, bounds),
    read: (location, object, offset, signal) =>
      Promise.resolve(readObject(holder, options.timeoutMs ?? 60_000, location, object, offset, signal)),
  };
};

/** How GCS is reached, and the downloader's settings. */
export interface GcsStorageOptions extends GcsClientOptions, ObjectDownloadOptions {}

/** The StorageProvider for `gs://bucket/prefix`: gcsClient under the generic object downloader. */
export const gcsStorage = (options: GcsStorageOptions = {}): StorageProvider => {
  const client = gcsClient(options);
  return objectStoreStorage({
    ...options,
    schemes: ['gs'],
    resolve: (uri) => E.map((location: ObjectLocation) => ({ client, location }))(gcsLocation(uri)),
  });
};
