/** The small interface each object store (S3, GCS, Azure Blob) implements for the generic object downloader. */

/** Where the objects of one model live: a bucket (or container) and a key prefix. */
export interface ObjectLocation {
  readonly bucket: string;
  readonly prefix: string;
  /** The redacted URI, for messages and logs (never the raw one). */
  readonly display: string;
}

/** One object under the prefix: its key, size in bytes, and the version a ranged read must match. */
export interface StoredObject {
  /** The full key in the bucket (or container). */
  readonly key: string;
  readonly size: number;
  /** S3 and Azure: the ETag; GCS: the generation. */
  readonly version: string;
}

/** What a store client does; every failure is an EffectError with a kind (never a raw SDK error). */
export interface ObjectStoreClient {
  /** Every object whose key starts with `prefix` (paging through all pages). */
  list(location: ObjectLocation, signal: AbortSignal): AsyncIterable<StoredObject>;
  /** The object's bytes from `offset` to its end; fails with kind `changed` (retryable) if its version moved. */
  read(
    location: ObjectLocation,
    object: StoredObject,
    offset: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>>;
}
