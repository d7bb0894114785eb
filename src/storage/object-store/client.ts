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

/** Counts one listing's pages and objects and remembers its page tokens (`listingBounds` makes one). */
export interface ListingBounds {
  /** Call with each page's next token (undefined on the last page); throws on a token the listing gave before. */
  page(nextToken: string | undefined): void;
  /** Call for each object listed; throws past the cap. */
  object(): void;
}

/** What a store client does; every failure is an EffectError with a kind (never a raw SDK error). */
export interface ObjectStoreClient {
  /** Its ranged reads come straight from their sockets into a part's buffers (see `PartsJob.readsDirect`). */
  readonly readsDirect?: boolean;
  /**
   * Every object whose key starts with `prefix` (paging through all pages), each item checked (`storedObject`)
   * and each page and object told to `bounds`, which ends a listing that does not.
   */
  list(location: ObjectLocation, signal: AbortSignal, bounds: ListingBounds): AsyncIterable<StoredObject>;
  /**
   * The object's bytes from `offset` to `end` (exclusive; default its size); fails with kind `changed` (retryable)
   * if its version moved.
   */
  read(
    location: ObjectLocation,
    object: StoredObject,
    offset: number,
    signal: AbortSignal,
    end?: number,
  ): Promise<AsyncIterable<Uint8Array>>;
}
