/** The small interface each remote store (S3, GCS, Azure Blob, the Hub) implements for the one download engine. */
import type { FileSelection } from '../../core/file-selection';
import type { ContentDigest } from '../listed-content';

/** Where the objects of one model live: a bucket (or container) and a key prefix. */
export interface ObjectLocation {
  readonly bucket: string;
  readonly prefix: string;
  /** The redacted URI, for messages and logs (never the raw one). */
  readonly display: string;
}

/** One object under the prefix: its full key, size in bytes, and the version a ranged read must match. */
export interface StoredObject {
  readonly key: string;
  readonly size: number;
  /** S3 and Azure: the ETag; GCS: the generation; the Hub: the commit. */
  readonly version: string;
  /** What the listing says the bytes hash to (the Hub's sha256 or git blob id): a file of another digest fails. */
  readonly digest?: ContentDigest | undefined;
}

/**
 * A listing of one commit of a repository (the Hub), not of whatever a bucket holds now: an answer that is not the
 * listed bytes is wrong (`invalid-response`), never a stale listing; a lone archive is saved as it is.
 */
export interface RepoListing {
  /** The identity of the selected files at the commit listed, for content reuse; called after the listing. */
  identity(select: FileSelection | undefined): string;
}

/** What a store said of one listed item, before it is believed (`listingBounds` checks it). */
export interface ListedItem {
  readonly key: unknown;
  readonly size: unknown;
  readonly version: unknown;
}

/** Counts one listing's pages and objects and remembers its page tokens (`listingBounds` makes one). */
export interface ListingBounds {
  /** Call with each page's next token (undefined on the last page); throws on a token the listing gave before. */
  page(nextToken: string | undefined): void;
  /** Call for each item `listing` lists: the item checked as a StoredObject; throws on a bad item or past the cap. */
  object(listing: string, item: ListedItem): StoredObject;
  /**
   * Sends a request of the listing (a page, the Hub's commit) through the store's pressure, if any (docs/storage.md, "When a store pushes
   * back"): until the store answers one, a request waits out a pause and tells a push-back, as a model's first
   * request; after, one is asked again after each pause, as a read in the middle of a download. None is asked
   * again at once.
   */
  readonly ask: <T>(request: () => Promise<T>) => Promise<T>;
}

/** What a store client does; every failure is an EffectError with a kind (never a raw SDK error). */
export interface ObjectStoreClient {
  /** Set for a repository at a commit (see RepoListing); absent: a bucket. */
  readonly repo?: RepoListing;
  /**
   * The store this client reads when its URI does not name it (a configured endpoint), part of a content's identity:
   * `s3://b/k` read from a tenant's own endpoint is not the bucket of the same name elsewhere, and the node cache
   * is shared by every pod of a node. Absent: the URI names it (Azure's account URL).
   */
  readonly store?: string;
  /** Every object whose key starts with `prefix`, through all pages, each page and item told to `bounds`. */
  list(location: ObjectLocation, signal: AbortSignal, bounds: ListingBounds): AsyncIterable<StoredObject>;
  /**
   * The object's bytes from `offset` to `end` (exclusive; default its size); `changed` if its version moved. The
   * request is sent and its answer's status read before the promise settles, so a refusal or a push-back rejects it
   * (where the store's pressure sees it), not the first chunk.
   */
  read(
    location: ObjectLocation,
    object: StoredObject,
    offset: number,
    signal: AbortSignal,
    end?: number,
  ): Promise<AsyncIterable<Uint8Array>>;
}

/** A read of no bytes (an empty range, an answer without a body). */
export const noBytes = (): AsyncIterable<Uint8Array> => (async function* () {})();

/**
 * The `Range` of a read of `object`'s bytes `[offset, end)`, open-ended when it runs to the end; none for the whole
 * object (a range of an empty object is unsatisfiable).
 */
export const rangeOf = (object: StoredObject, offset: number, end: number): string | undefined =>
  offset > 0 || end < object.size ? `bytes=${offset}-${end < object.size ? end - 1 : ''}` : undefined;
