/** An in-memory ObjectStoreClient for tests of the generic downloader: sorted, paged listings, ranged reads, faults. */
import { permanentError, retryableError, type EffectError } from '../../../src/core/errors';
import type {
  ObjectLocation,
  ObjectStoreClient,
  StoredObject,
} from '../../../src/storage/object-store/client';
import {
  downloadObjects,
  type ObjectDownloadOptions,
} from '../../../src/storage/object-store/download-objects';
import type { DownloadProgress, DownloadRequest } from '../../../src/ports';
import { withFailures } from '../../../src/net';
import { UntrustedBytes } from '../../../src/storage/parts/fetch-parts';

interface Entry {
  data: Buffer;
  version: string;
}

/** Rejects when `signal` aborts, as a real client's pending read does. */
const aborted = (signal: AbortSignal): Promise<never> =>
  new Promise((_, reject) => {
    const fail = (): void => reject(signal.reason as Error);
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });

/** One read the store answered: which key, from which offset. */
export interface MemoryRead {
  readonly key: string;
  readonly offset: number;
  /** Where a ranged part's read stops (exclusive); absent: the object's end. */
  readonly end?: number;
}

/** An in-memory bucket with fault switches; `client` is what the downloader gets. */
export class MemoryStore {
  private readonly entries = new Map<string, Entry>();
  private readonly cuts = new Map<string, number[]>();
  private readonly unframed = new Set<string>();
  private readonly failures = new Map<string, { error: EffectError; skip: number }>();
  private gate: Promise<void> | undefined;
  /** Told each time a body opens (holdUntilInFlight). */
  private opened: (() => void) | undefined;
  private versions = 0;
  /** Every read, in order. */
  readonly reads: MemoryRead[] = [];
  /** Every listing's prefix, in order. */
  readonly listings: string[] = [];
  /** Reads whose body is being consumed now, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;

  constructor(
    readonly bucket = 'models',
    private readonly pageSize = 2,
    private readonly chunkSize = 1024,
    /** Each read's body is served at most this fast, as a cloud store caps one connection (default: at once). */
    private readonly bytesPerSecond?: number,
  ) {}

  /** Stores `data` at `key` with a new version. */
  put(key: string, data: string | Buffer): this {
    this.entries.set(key, { data: Buffer.from(data), version: `v${++this.versions}` });
    return this;
  }

  /** Stores `data` at `key` listed with no version (an S3-compatible store that lists no ETag). */
  putUnversioned(key: string, data: string | Buffer): this {
    this.entries.set(key, { data: Buffer.from(data), version: '' });
    return this;
  }

  /** Each following read of `key` that reaches one of `afterBytes` (object offsets) fails there, once each. */
  cut(key: string, ...afterBytes: number[]): this {
    this.cuts.set(key, afterBytes);
    return this;
  }

  /** As `cut`, the answers not framed by their length: the failure is marked UntrustedBytes, as a client marks it. */
  cutUnframed(key: string, ...afterBytes: number[]): this {
    this.unframed.add(key);
    return this.cut(key, ...afterBytes);
  }

  /** Reads of `key` after its first `skip` reads fail with `error` (before any byte). */
  fail(key: string, error: EffectError, skip = 0): this {
    this.failures.set(key, { error, skip });
    return this;
  }

  /**
   * Bodies send their first chunk only once `reads` bodies are open at once: a test of reads in parallel then
   * waits for its condition instead of hoping that they overlap.
   */
  holdUntilInFlight(reads: number): this {
    const release = this.hold();
    this.opened = () => {
      if (this.inFlight < reads) return;
      this.opened = undefined;
      release();
    };
    return this;
  }

  /** Bodies send their first chunk only once the returned function is called. */
  hold(): () => void {
    let open: () => void = () => undefined;
    this.gate = new Promise((resolve) => (open = resolve));
    return () => {
      this.gate = undefined;
      open();
    };
  }

  /** The location of `prefix` in this bucket. */
  at(prefix: string): ObjectLocation {
    return { bucket: this.bucket, prefix, display: `mem://${this.bucket}/${prefix}` };
  }

  /** downloadObjects of `prefix` in this bucket into `targetDir`. */
  downloadInto(
    targetDir: string,
    prefix: string,
    options: ObjectDownloadOptions = {},
    signal: AbortSignal = new AbortController().signal,
    progress?: (progress: DownloadProgress) => void,
    request?: DownloadRequest,
  ): Promise<void> {
    return downloadObjects(this.client, this.at(prefix), targetDir, signal, options, progress, request);
  }

  readonly client: ObjectStoreClient = {
    list: (location, signal) => this.list(location, signal),
    read: (location, object, offset, signal, end) => this.read(object, offset, signal, end),
  };

  private async *list(location: ObjectLocation, signal: AbortSignal): AsyncGenerator<StoredObject> {
    this.listings.push(location.prefix);
    if (location.bucket !== this.bucket) {
      throw permanentError('not-found', `no bucket ${location.bucket}`);
    }
    const keys = [...this.entries.keys()].filter((key) => key.startsWith(location.prefix)).sort();
    for (let page = 0; page < keys.length; page += this.pageSize) {
      await Promise.resolve();
      signal.throwIfAborted();
      for (const key of keys.slice(page, page + this.pageSize)) {
        const entry = this.entries.get(key)!;
        yield { key, size: entry.data.length, version: entry.version };
      }
    }
  }

  private read(
    object: StoredObject,
    offset: number,
    signal: AbortSignal,
    end?: number,
  ): Promise<AsyncIterable<Uint8Array>> {
    this.reads.push({ key: object.key, offset, ...(end !== undefined ? { end } : {}) });
    const failure = this.failures.get(object.key);
    if (failure !== undefined && failure.skip-- <= 0) return Promise.reject(failure.error);
    const entry = this.entries.get(object.key);
    if (entry === undefined) return Promise.reject(permanentError('not-found', `no key ${object.key}`));
    if (entry.version !== object.version) {
      return Promise.reject(retryableError('changed', `${object.key} changed: ${entry.version}`));
    }
    const cuts = this.cuts.get(object.key) ?? [];
    const cutAt = cuts.find((at) => at > offset && at < (end ?? entry.data.length));
    if (cutAt !== undefined) cuts.splice(cuts.indexOf(cutAt), 1);
    const data = end === undefined ? entry.data : entry.data.subarray(0, end);
    const body = this.body(data, offset, cutAt, signal);
    return Promise.resolve(
      this.unframed.has(object.key) ? withFailures(body, (cause) => new UntrustedBytes(cause)) : body,
    );
  }

  private async *body(
    data: Buffer,
    offset: number,
    cutAt: number | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<Uint8Array> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    this.opened?.();
    try {
      if (this.gate !== undefined) await Promise.race([this.gate, aborted(signal)]);
      const started = performance.now();
      for (let at = offset; at < data.length; at += this.chunkSize) {
        signal.throwIfAborted();
        const aheadMs =
          this.bytesPerSecond === undefined
            ? 0
            : ((at - offset) / this.bytesPerSecond) * 1000 - (performance.now() - started);
        if (aheadMs > 0) await new Promise((resolve) => setTimeout(resolve, aheadMs));
        const end = Math.min(at + this.chunkSize, data.length, cutAt ?? data.length);
        if (end > at) yield data.subarray(at, end);
        if (cutAt !== undefined && end >= cutAt) {
          throw retryableError('network', `connection reset after ${end} bytes`);
        }
        await Promise.resolve();
      }
    } finally {
      this.inFlight -= 1;
    }
  }
}
