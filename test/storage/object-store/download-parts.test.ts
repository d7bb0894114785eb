/** Tests of the object downloader's ranged parts over an in-memory store: ranges, a cut range resumed alone, reuse. */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { effectError } from '../../helpers/effect-error';
import { useTempDir } from '../../helpers/temp-dir';
import { MemoryStore } from './memory-store';

const MiB = 2 ** 20;
const staging = useTempDir('object-parts');
const size = 40 * MiB + 77;
const data = Buffer.alloc(size, 0);
for (let i = 0; i < size; i += 4096) data.writeUInt32LE(i, i);
const digest = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

// Each read at 50 MB/s, as a cloud store caps a connection: a first connection this slow is never enough alone.
const pacedStore = () => new MemoryStore('models', 2, 64 * 1024, 50e6);

describe('downloadObjects in parts', () => {
  it('reads a big object as ranges, `streams` at once, into one file', async () => {
    // No body sends a byte before four are open: a first connection that brings nothing is never enough alone (the
    // one-stream rule), and the others overlap it because the store waits for them, at any speed of the host.
    const store = pacedStore().put('m/weights.bin', data).holdUntilInFlight(4);
    await store.downloadInto(staging.path, 'm', { streams: 4 });
    expect(digest(await readFile(path.join(staging.path, 'weights.bin')))).toBe(digest(data));
    const ranges = store.reads.filter((read) => read.end !== undefined);
    expect(ranges.length).toBeGreaterThanOrEqual(4);
    expect(store.maxInFlight).toBe(4);
  });

  it('resumes a cut range from where it broke off; the other ranges are read once', async () => {
    const cutAt = 9 * MiB + 3 * 64 * 1024;
    const store = pacedStore().put('m/weights.bin', data).cut('m/weights.bin', cutAt);
    await store.downloadInto(staging.path, 'm', { streams: 4 });
    expect(digest(await readFile(path.join(staging.path, 'weights.bin')))).toBe(digest(data));
    const starts = store.reads.map((read) => read.offset);
    expect(starts.filter((offset) => offset % MiB !== 0)).toEqual([cutAt]);
    expect(new Set(starts).size).toBe(starts.length);
  });

  it('reads a cut range of an unframed answer again from where that read began, none of its bytes kept', async () => {
    const cutAt = 9 * MiB + 3 * 64 * 1024;
    const store = pacedStore().put('m/weights.bin', data).cutUnframed('m/weights.bin', cutAt);
    await store.downloadInto(staging.path, 'm', { streams: 4 });
    expect(digest(await readFile(path.join(staging.path, 'weights.bin')))).toBe(digest(data));
    const starts = store.reads.map((read) => read.offset);
    // The read that broke off is asked again from its own start; no read starts at the cut.
    const cutRead = store.reads.find((read) => read.offset < cutAt && (read.end ?? size) > cutAt)!;
    expect(starts.filter((offset) => offset === cutRead.offset)).toHaveLength(2);
    expect(starts).not.toContain(cutAt);
  });

  it('fails one stream of an unframed answer that broke off with its own failure, resuming none of it', async () => {
    const small = data.subarray(0, 3 * MiB);
    const store = pacedStore().put('m/weights.bin', small).cutUnframed('m/weights.bin', MiB);
    const error = await effectError(store.downloadInto(staging.path, 'm', { streams: 1 }));
    expect(error).toMatchObject({ kind: 'network', retryable: true });
    expect(error.message).toContain(`connection reset after ${MiB} bytes`);
    expect(store.reads).toHaveLength(1);
  });

  it('fails as a retryable `changed` when the object gets a new version mid-way', async () => {
    const store = pacedStore().put('m/weights.bin', data);
    const release = store.hold();
    const download = store.downloadInto(staging.path, 'm', { streams: 4 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    store.put('m/weights.bin', data);
    release();
    expect(await effectError(download)).toMatchObject({ kind: 'changed', retryable: true });
  });

  it('offers the listing as an identity before any read, and reads nothing when the offer is taken', async () => {
    const store = pacedStore().put('m/weights.bin', data);
    const offered: string[] = [];
    const reuse = (identity: string) => {
      offered.push(identity);
      return Promise.resolve(true);
    };
    await store.downloadInto(staging.path, 'm', { streams: 4 }, undefined, undefined, { reuse });
    expect(store.reads).toEqual([]);
    expect(offered).toHaveLength(1);
    // The identity names the version: a new upload of the same key is another identity.
    store.put('m/weights.bin', data);
    await store.downloadInto(staging.path, 'm', { streams: 4 }, undefined, undefined, { reuse });
    expect(offered[1]).not.toBe(offered[0]);
  });

  // docs/storage.md "The identity": a provider with no validator offers none. An object listed without an ETag (an
  // S3-compatible store that lists none) made an identity of its path and size alone, so another model, or the
  // node cache, was filled with whatever bytes of that size were installed under it.
  it('offers no identity when an object is listed without a version, and downloads it', async () => {
    const store = pacedStore().put('m/config.json', '{}').putUnversioned('m/weights.bin', data);
    const offered: string[] = [];
    const reuse = (identity: string) => {
      offered.push(identity);
      return Promise.resolve(true);
    };
    await store.downloadInto(staging.path, 'm', { streams: 4 }, undefined, undefined, { reuse });
    expect(offered).toEqual([]);
    expect((await readFile(path.join(staging.path, 'weights.bin'))).equals(data)).toBe(true);
  });

  // Nothing pins a read of an unversioned object to the bytes listed: ranges, or a resume after a cut, of a key
  // rewritten meanwhile (same size) spliced two uploads into one file, which no check of size could see.
  it('reads an object listed without a version as one stream, never resumed', async () => {
    const store = pacedStore()
      .putUnversioned('m/weights.bin', data)
      .cut('m/weights.bin', 8 * MiB);
    const error = await effectError(store.downloadInto(staging.path, 'm', { streams: 4 }));
    expect(error).toMatchObject({ retryable: true });
    expect(store.reads).toEqual([{ key: 'm/weights.bin', offset: 0 }]);
  });
});
