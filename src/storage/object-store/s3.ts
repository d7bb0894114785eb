/** s3Storage: the StorageProvider for `s3://bucket/prefix`, an ObjectStoreClient over @aws-sdk/client-s3 (ListObjectsV2 paged, GetObject ranged and If-Match). */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import * as E from 'fp-ts/Either';
import { retryableError } from '../../core/errors';
import { storageRequestTries } from '../../core/retry-policy';
import { redactUri } from '../../core/storage-uri';
import type { StorageProvider } from '../../ports';
import { noBytes, rangeOf, type ObjectLocation, type ObjectStoreClient, type ListingBounds } from './client';
import { objectStoreStorage, type ObjectDownloadOptions } from './download-objects';
import { lazyModule } from '../../core/lazy-module';
import { withFailures } from '../../net';
import { rangedFailure } from '../parts/fetch-parts';
import { changedObject, s3Error, type S3Request } from './s3-errors';
import { invalidListing, pageObjects } from './listing-bounds';
import type { S3Settings } from './s3-settings';
import { s3RequestHandler, type S3HandlerSettings } from './s3-range-handler';
import { boundS3Answers } from './sdk-answers';
import { defaultDownloadLimits, type MinRate } from '../download-limits';
import type { S3Credentials } from './s3-credentials';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first s3:// model (lazy-module.ts) */
const s3Sdk = lazyModule(() => require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3'));

/** How the S3 client reaches the store. */
export interface S3ClientSettings
  extends
    Pick<S3Settings, 'endpoint' | 'region' | 'addressing'>,
    Partial<Pick<S3Settings, 'useAccelerate'>>,
    S3HandlerSettings {
  readonly credentials: S3Credentials;
  /** The SDK's attempts per request before a transient failure fails the attempt (default `storageRequestTries`). */
  readonly maxAttempts?: number;
  /** The slowest a store's answer (a listing page, an error) may come; default `--min-download-rate`'s. */
  readonly minRate?: MinRate;
}

/** The SDK settings that make every request unsigned (a public bucket): no identity, no signature. */
const anonymousAuth: Pick<S3ClientConfig, 'httpAuthSchemes'> = {
  httpAuthSchemes: ['aws.auth#sigv4', 'aws.auth#sigv4a'].map((schemeId) => ({
    schemeId,
    identityProvider: () => () => Promise.resolve({}),
    signer: { sign: <T>(request: T) => Promise.resolve(request) },
  })),
};

/** The SDK client for `settings`, each answer it reads whole bounded while it streams (boundS3Answers). */
export const s3SdkClient = (settings: S3ClientSettings): S3Client => {
  const client = new (s3Sdk().S3Client)({
    region: settings.region,
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
    forcePathStyle:
      settings.addressing === 'path' || (settings.addressing === 'auto' && settings.endpoint !== undefined),
    useAccelerateEndpoint: settings.useAccelerate === true,
    // A bucket in another region answers 301: follow it rather than fail on a region setting.
    followRegionRedirects: true,
    maxAttempts: settings.maxAttempts ?? storageRequestTries,
    // Checksums only where S3 requires them: a ranged read has no whole-object checksum to check, and
    // S3-compatible stores (older MinIO, Ceph) mishandle the SDK's newer defaults.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: s3RequestHandler(settings),
    ...(settings.credentials === 'anonymous' ? anonymousAuth : { credentials: settings.credentials }),
  });
  boundS3Answers(client, settings.minRate ?? defaultDownloadLimits.minRate);
  return client;
};

/** Every object under the location's prefix, page after page (S3 answers at most 1,000 per page). */
async function* listObjects(
  client: S3Client,
  at: string,
  location: ObjectLocation,
  signal: AbortSignal,
  bounds: ListingBounds,
) {
  const request: S3Request = {
    what: `${location.display}: listing bucket ${location.bucket} under ${JSON.stringify(location.prefix)}${at}`,
    signal,
  };
  let token: string | undefined;
  do {
    const input = { Bucket: location.bucket, Prefix: location.prefix, ContinuationToken: token };
    const page = await bounds.ask(() =>
      client
        .send(new (s3Sdk().ListObjectsV2Command)(input), { abortSignal: signal })
        .catch((cause: unknown) => Promise.reject(s3Error(cause, request))),
    );
    // Every ListBucketResult names its bucket; a 200 without one (an HTML page, a proxy's answer) is no listing,
    // not an empty bucket.
    if (typeof page.Name !== 'string')
      throw invalidListing(
        request.what,
        `HTTP ${page.$metadata.httpStatusCode ?? '?'} with no ListBucketResult in it (no bucket name)`,
      );
    yield* pageObjects(request.what, 'Contents', page.Contents ?? [], bounds, (fields) => ({
      key: fields?.['Key'],
      size: fields?.['Size'],
      version: fields?.['ETag'],
    }));
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    if (page.IsTruncated === true && (typeof token !== 'string' || token === '')) {
      throw retryableError(
        'invalid-response',
        `${request.what}: a truncated page without a continuation token`,
      );
    }
    bounds.page(token);
  } while (token !== undefined);
}

/** GetObject from `offset` on, If-Match on the listed ETag (and the answer's ETag checked too: not every store honours If-Match). */
const readObject =
  (client: S3Client, at: string): ObjectStoreClient['read'] =>
  async (location, object, offset, signal, end = object.size) => {
    const request: S3Request = {
      what: `${location.display}: reading ${object.key} from bucket ${location.bucket}${at}`,
      signal,
      listed: true,
    };
    const range = rangeOf(object, offset, end);
    try {
      const output = await client.send(
        new (s3Sdk().GetObjectCommand)({
          Bucket: location.bucket,
          Key: object.key,
          ...(object.version !== '' ? { IfMatch: object.version } : {}),
          ...(range !== undefined ? { Range: range } : {}),
        }),
        { abortSignal: signal },
      );
      // In Node, a Readable stream (withFailures destroys it however reading ends).
      const body = output.Body as (AsyncIterable<Uint8Array> & { destroy?: () => void }) | undefined;
      const mismatch =
        object.version !== '' && output.ETag !== undefined && output.ETag !== object.version
          ? `its ETag is ${output.ETag}, not ${object.version}`
          : range !== undefined && !(output.ContentRange ?? '').startsWith(`bytes ${offset}-${end - 1}/`)
            ? `the store answered bytes ${output.ContentRange ?? 'from 0'} to a read from byte ${offset}`
            : undefined;
      if (mismatch !== undefined) {
        body?.destroy?.();
        throw changedObject(request.what, mismatch);
      }
      const framed = range === undefined || output.ContentLength !== undefined;
      return withFailures(body ?? noBytes(), (cause) =>
        rangedFailure(framed, s3Error(cause, { ...request, inBody: true })),
      );
    } catch (cause) {
      throw s3Error(cause, request);
    }
  };

/**
 * An ObjectStoreClient over one SDK client: every failure an EffectError naming the bucket and the key (and the
 * endpoint, when one was set). `endpoint`: the custom endpoint the SDK client was made with (absent: AWS), which a
 * content's identity names.
 */
export const s3ObjectClient = (client: S3Client, endpoint?: string): ObjectStoreClient => {
  // A store of one's own (MinIO, Ceph) is named in every failure: which server refused a certificate, did not answer.
  const at = endpoint === undefined ? '' : ` at ${redactUri(endpoint)}`;
  return {
    ...(endpoint === undefined ? {} : { store: endpoint }),
    list: (location, signal, bounds) => listObjects(client, at, location, signal, bounds),
    read: readObject(client, at),
  };
};

// Bucket names as S3 (legacy ones included), MinIO and Ceph allow them; the store says whether one exists.
const bucketPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/**
 * The bucket and prefix of `s3://bucket[/prefix]` (the scheme in any case), as KServe splits it: at the first `/`
 * after the bucket, the prefix taken as written. The Left says why `uri` is no S3 location, never quoting what
 * could be a credential.
 */
export const parseS3Uri = (uri: string): E.Either<string, ObjectLocation> => {
  const display = redactUri(uri);
  const match = /^s3:\/\/([^/]*)(?:\/(.*))?$/is.exec(uri);
  if (match === null) return E.left(`${display} is not an s3://bucket/prefix URI`);
  const bucket = match[1]!;
  if (bucket.includes('@')) {
    return E.left(`${display}: an s3:// URI carries no credentials; the AWS credential chain supplies them`);
  }
  if (!bucketPattern.test(bucket))
    return E.left(`${display}: ${JSON.stringify(bucket)} is not a bucket name`);
  return E.right({ bucket, prefix: match[2] ?? '', display });
};

/** What s3Storage needs: the client settings and how objects are downloaded. */
export type S3StorageOptions = S3ClientSettings & ObjectDownloadOptions;

/**
 * Downloads `s3://bucket/prefix` models with one SDK client (see downloadObjects for the rules of prefixes, paths,
 * archives and resumes, and s3Error for the failures).
 */
export const s3Storage = (options: S3StorageOptions): StorageProvider => {
  // Made at the first s3:// model, not at start: the SDK's set-up (and its Node-version warning) only for S3 users.
  let client: ObjectStoreClient | undefined;
  return objectStoreStorage({
    ...options,
    schemes: ['s3'],
    resolve: (uri) =>
      E.map((location: ObjectLocation) => {
        client ??= s3ObjectClient(
          s3SdkClient({ ...options, minRate: options.limits?.minRate }),
          options.endpoint,
        );
        return { client, location };
      })(parseS3Uri(uri)),
  });
};
