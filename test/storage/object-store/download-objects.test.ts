/** Tests of the generic object-store downloader over an in-memory store: prefix rules, paths, bound, abort, resume, caps. */
import { httpStatusError, permanentError, retryableError } from '../../../src/core/errors';
import { StorePressure } from '../../../src/storage/store-pressure';
import { defaultDownloadLimits } from '../../../src/storage/download-limits';
import {
  downloadObjects,
  type ObjectDownloadOptions,
} from '../../../src/storage/object-store/download-objects';
import type { DownloadProgress } from '../../../src/ports';
import { waitFor } from '../../../src/testing/wait';
import { effectError } from '../../helpers/effect-error';
import { listTree, readFiles } from '../../helpers/file-tree';
import { makeTarGz } from '../../helpers/storage-server';
import { removeTempDir, tempDir, useTempDir } from '../../helpers/temp-dir';
import { readdir, rename, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryStore } from './memory-store';

const staging = useTempDir('objects');

/** A body of `chunks`, whatever offset is asked for. */
async function* bodyOf(...chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield await Promise.resolve(chunk);
}

const download = (
  store: MemoryStore,
  prefix: string,
  options: ObjectDownloadOptions = {},
  signal?: AbortSignal,
) => store.downloadInto(staging.path, prefix, options, signal);

describe('downloadObjects', () => {
  describe('what a prefix names', () => {
    it('takes the objects under the prefix as a directory, at their nested paths, across listing pages', async () => {
      const store = new MemoryStore()
        .put('models/m1/config.json', '{}')
        .put('models/m1/1/model.onnx', 'weights')
        .put('models/m1/1/deep/er/vocab.txt', 'a b c')
        .put('models/other/x', 'not mine');
      await download(store, 'models/m1');
      expect(await readFiles(staging.path)).toEqual({
        'config.json': '{}',
        '1/model.onnx': 'weights',
        '1/deep/er/vocab.txt': 'a b c',
      });
    });

    it('never takes m10/... for the prefix m1 (KServe matched the text)', async () => {
      const store = new MemoryStore().put('m1/a.bin', 'one').put('m10/b.bin', 'ten').put('m1.txt', 'file');
      await download(store, 'm1');
      expect(await listTree(staging.path)).toEqual(['a.bin']);
    });

    it('takes a prefix given with its trailing slash the same way', async () => {
      const store = new MemoryStore().put('m1/a.bin', 'one').put('m10/b.bin', 'ten');
      await download(store, 'm1/');
      expect(await listTree(staging.path)).toEqual(['a.bin']);
    });

    it('skips folder markers (keys ending in /) and keeps the files below them', async () => {
      const store = new MemoryStore()
        .put('m1/', '')
        .put('m1/sub/', '')
        .put('m1/sub/weights.bin', 'w')
        .put('m1/empty/', '');
      await download(store, 'm1');
      expect(await listTree(staging.path)).toEqual(['sub/', 'sub/weights.bin']);
    });

    it('downloads the one object a prefix names exactly, as its base name', async () => {
      const store = new MemoryStore().put('models/m1/model.pt', 'torch').put('models/m1/model.pt.bak', 'old');
      await download(store, 'models/m1/model.pt');
      expect(await readFiles(staging.path)).toEqual({ 'model.pt': 'torch' });
    });

    it('prefers the directory when a key is both an object and a directory prefix', async () => {
      const store = new MemoryStore().put('m1', 'lone object').put('m1/a', 'in the dir');
      await download(store, 'm1');
      expect(await readFiles(staging.path)).toEqual({ a: 'in the dir' });
    });

    it('takes the whole bucket for an empty prefix', async () => {
      const store = new MemoryStore().put('a', '1').put('b/c', '2');
      await download(store, '');
      expect(await readFiles(staging.path)).toEqual({ a: '1', 'b/c': '2' });
    });

    it('saves an empty object as an empty file', async () => {
      const store = new MemoryStore().put('m1/empty', '').put('m1/full', 'x');
      await download(store, 'm1');
      expect(await readFiles(staging.path)).toEqual({ empty: '', full: 'x' });
    });

    it('fails for good, naming bucket and prefix, when nothing (or only folders) is there', async () => {
      const store = new MemoryStore().put('m1/', '').put('m10/x', 'ten');
      const error = await effectError(download(store, 'm1'));
      expect(error).toMatchObject({ kind: 'not-found', retryable: false });
      expect(error.message).toBe('mem://models/m1: no objects named "m1" or under "m1/" in bucket models');
      expect(await listTree(staging.path)).toEqual([]);
      const empty = await effectError(download(new MemoryStore(), ''));
      expect(empty.message).toBe('mem://models/: no objects at all in bucket models');
    });

    it('quotes a long missing prefix cut, once the URI has named it whole', async () => {
      const prefix = 'p'.repeat(10_000);
      const error = await effectError(download(new MemoryStore(), prefix));
      expect(error.kind).toBe('not-found');
      expect(error.message).toContain(`no objects named "${'p'.repeat(200)}"… (10000 characters) or under`);
      expect(error.message.length).toBeLessThan(prefix.length + 1_000);
    });

    it('passes a listing failure on as the client classified it', async () => {
      const store = new MemoryStore('models');
      const error = await effectError(
        downloadObjects(
          store.client,
          { ...store.at('m1'), bucket: 'gone' },
          staging.path,
          new AbortController().signal,
        ),
      );
      expect(error).toMatchObject({ kind: 'not-found', message: 'no bucket gone' });
    });
  });

  describe('keys that cannot be saved safely', () => {
    it.each([
      ['m1/../../etc/passwd', "its path contains '..'"],
      ['m1//etc/passwd', 'its path is absolute'],
      ['m1/a\\..\\..\\x', "its path contains '..'"],
      ['m1/a\0b', 'its name contains NUL'],
      ['m1/.', 'it names the model dir itself'],
    ])('refuses the key %j before fetching anything', async (key, why) => {
      const store = new MemoryStore().put('m1/fine', 'ok').put(key, 'evil');
      const error = await effectError(download(store, 'm1'));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toContain(`refusing object ${JSON.stringify(key)}: ${why}`);
      expect(store.reads).toEqual([]);
      expect(await listTree(staging.path)).toEqual([]);
    });

    it('refuses two keys for one path, and a key another one needs as a directory', async () => {
      const twice = new MemoryStore().put('m1/a/b', '1').put('m1/a//b', '2');
      expect(await effectError(download(twice, 'm1'))).toMatchObject({ kind: 'refused' });
      const fileAndDir = new MemoryStore().put('m1/a', 'file').put('m1/a/b', 'below it');
      const error = await effectError(download(fileAndDir, 'm1'));
      expect(error.message).toContain(
        'refusing object "m1/a/b": it would be saved under a, which is the object "m1/a"',
      );
      expect(fileAndDir.reads).toEqual([]);
    });

    it('never writes through a subdir a neighbour swaps for a link mid-download (the model server, same uid or root)', async () => {
      const outside = await tempDir('outside');
      try {
        const store = new MemoryStore().put('m1/sub/a', 'first').put('m1/sub/b', 'second');
        const read = store.client.read.bind(store.client);
        // As sub/a's bytes come, the neighbour moves sub away and puts a link to a dir outside in its place.
        const swapping = {
          ...store.client,
          read: async (...args: Parameters<typeof read>) => {
            if (args[1].key === 'm1/sub/a') {
              await rename(join(staging.path, 'sub'), join(staging.path, 'moved'));
              await symlink(outside, join(staging.path, 'sub'));
            }
            return read(...args);
          },
        };
        const error = await effectError(
          downloadObjects(swapping, store.at('m1'), staging.path, new AbortController().signal, {
            concurrency: 1,
          }),
        );
        expect(error).toMatchObject({ kind: 'filesystem' });
        expect(await readdir(outside)).toEqual([]);
      } finally {
        await removeTempDir(outside);
      }
    });
  });

  describe('objects in flight', () => {
    it('fetches at most `concurrency` objects at once, and that many when there are more', async () => {
      const store = new MemoryStore();
      for (let i = 0; i < 12; i++) store.put(`m1/part-${String(i).padStart(2, '0')}`, `part ${i}`);
      const release = store.hold();
      const done = download(store, 'm1', { concurrency: 3 });
      await waitFor(() => store.inFlight === 3, 10_000, 'three reads in flight');
      release();
      await done;
      expect(store.maxInFlight).toBe(3);
      expect(await listTree(staging.path)).toHaveLength(12);
    });

    it('stops the other objects at the first failure and fails with it', async () => {
      const store = new MemoryStore().put('m1/a', 'a').put('m1/b', 'b').put('m1/c', 'c');
      store.fail('m1/b', permanentError('refused', 'access denied to m1/b'));
      store.hold();
      const error = await effectError(download(store, 'm1', { concurrency: 3 }));
      expect(error).toMatchObject({ kind: 'refused', message: 'access denied to m1/b' });
      await waitFor(() => store.inFlight === 0, 10_000, 'no read in flight');
    });

    it('stops promptly when aborted, with an `aborted` failure', async () => {
      const store = new MemoryStore().put('m1/a', 'a').put('m1/b', 'b');
      store.hold();
      const controller = new AbortController();
      const done = download(store, 'm1', {}, controller.signal);
      await waitFor(() => store.inFlight === 2, 10_000, 'both reads in flight');
      controller.abort();
      expect(await effectError(done)).toMatchObject({ kind: 'aborted', retryable: true });
      await waitFor(() => store.inFlight === 0, 10_000, 'no read in flight');
    });
  });

  describe('resuming', () => {
    const big = Buffer.from(
      Array.from({ length: 10_000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''),
    );

    it('resumes a cut object from the bytes already written, with a ranged read', async () => {
      const store = new MemoryStore().put('m1/weights.bin', big).put('m1/small', 's');
      store.cut('m1/weights.bin', 4096, 8192);
      await download(store, 'm1');
      expect(store.reads.filter((read) => read.key === 'm1/weights.bin')).toEqual([
        { key: 'm1/weights.bin', offset: 0 },
        { key: 'm1/weights.bin', offset: 4096 },
        { key: 'm1/weights.bin', offset: 8192 },
      ]);
      expect((await readFiles(staging.path))['weights.bin']).toBe(big.toString());
    });

    it('gives up, retryably, after `maxResumes` failed resumes in a row without a new byte', async () => {
      const store = new MemoryStore().put('m1/weights.bin', big);
      store.cut('m1/weights.bin', 4096);
      store.fail('m1/weights.bin', retryableError('network', 'connection refused'), 1);
      const error = await effectError(download(store, 'm1', { maxResumes: 2 }));
      expect(error).toMatchObject({ kind: 'network', retryable: true, message: 'connection refused' });
      expect(store.reads.map((read) => read.offset)).toEqual([0, 4096, 4096, 4096]);
    });

    it('does not resume a read that failed before any byte was written: the loader retries it', async () => {
      const store = new MemoryStore().put('m1/weights.bin', big);
      store.fail('m1/weights.bin', retryableError('http-status', 'SlowDown (HTTP 503)'));
      const error = await effectError(download(store, 'm1'));
      expect(error).toMatchObject({ kind: 'http-status', retryable: true });
      expect(store.reads).toHaveLength(1);
    });

    it("waits out a store's push-back (503 SlowDown, its Retry-After) before reading again, then finishes", async () => {
      const store = new MemoryStore().put('m1/weights.bin', big);
      const readAt: number[] = [];
      const pushingBack = {
        ...store.client,
        read: (...args: Parameters<typeof store.client.read>) => {
          readAt.push(performance.now());
          if (readAt.length <= 2) return Promise.reject(httpStatusError('GetObject', 503, 'SlowDown', 80));
          return store.client.read(...args);
        },
      };
      await downloadObjects(pushingBack, store.at('m1'), staging.path, new AbortController().signal, {
        pressure: new StorePressure(),
      });
      expect((await readFiles(staging.path))['weights.bin']).toBe(big.toString());
      expect(readAt).toHaveLength(3);
      expect(readAt[1]! - readAt[0]!).toBeGreaterThanOrEqual(75);
      expect(readAt[2]! - readAt[1]!).toBeGreaterThanOrEqual(75);
    });

    it('does not resume an object that changed since it was listed: the attempt fails `changed`, to list again', async () => {
      const store = new MemoryStore().put('m1/weights.bin', big);
      store.cut('m1/weights.bin', 4096);
      const release = store.hold();
      const done = download(store, 'm1');
      await waitFor(() => store.reads.length === 1, 10_000, 'the first read');
      store.put('m1/weights.bin', 'new contents');
      release();
      expect(await effectError(done)).toMatchObject({ kind: 'changed', retryable: true });
      expect(store.reads.map((read) => read.offset)).toEqual([0, 4096]);
    });

    it('fails a body that ends short of the listed size (resuming first), and one longer than listed', async () => {
      const store = new MemoryStore().put('m1/a', 'abc');
      const empty = { ...store.client, read: () => Promise.resolve(bodyOf()) };
      const short = await effectError(
        downloadObjects(empty, store.at('m1'), staging.path, new AbortController().signal, { maxResumes: 1 }),
      );
      expect(short).toMatchObject({ kind: 'network', retryable: true });
      expect(short.message).toBe('downloading mem://models/m1: m1/a ended after 0 of 3 bytes');
      const longer = { ...store.client, read: () => Promise.resolve(bodyOf(Buffer.from('abcdef'))) };
      const long = await effectError(
        downloadObjects(longer, store.at('m1'), `${staging.path}/other`, new AbortController().signal),
      );
      expect(long).toMatchObject({ kind: 'changed', retryable: true });
    });
  });

  describe('progress', () => {
    const limits = (progressIntervalMs: number) => ({ ...defaultDownloadLimits, progressIntervalMs });

    it('reports the bytes of all objects against the sum of the listed sizes while they run, and once at the end', async () => {
      const store = new MemoryStore(undefined, 2, 100)
        .put('m1/a.bin', Buffer.alloc(3000, 1))
        .put('m1/b.bin', Buffer.alloc(2000, 2))
        .put('m1/c/d.bin', Buffer.alloc(1000, 3));
      const reports: DownloadProgress[] = [];
      const release = store.hold();
      const done = store.downloadInto(
        staging.path,
        'm1',
        { limits: limits(5) },
        new AbortController().signal,
        (progress) => reports.push(progress),
      );
      await waitFor(() => reports.length > 0, 10_000, 'a report while the bodies are held');
      expect(reports[0]).toMatchObject({ bytes: 0, totalBytes: 6000, done: false });
      release();
      await done;
      const last = reports.at(-1)!;
      expect(last).toMatchObject({ bytes: 6000, totalBytes: 6000, done: true });
      expect(reports.filter((report) => report.done)).toHaveLength(1);
      const counts = reports.map((report) => report.bytes);
      expect(counts).toEqual([...counts].sort((a, b) => a - b));
    });

    it('counts a resumed object once: the bytes before the cut are not fetched again', async () => {
      const store = new MemoryStore().put('m1/weights.bin', Buffer.alloc(10_000, 7));
      store.cut('m1/weights.bin', 4096);
      const reports: DownloadProgress[] = [];
      await store.downloadInto(staging.path, 'm1', { limits: limits(0) }, undefined, (p) => reports.push(p));
      expect(reports).toEqual([expect.objectContaining({ bytes: 10_000, totalBytes: 10_000, done: true })]);
    });

    it('reports the compressed bytes of an archive model, and nothing when the listing fails', async () => {
      const archive = await makeTarGz({ 'model.bin': 'x'.repeat(100_000) });
      const store = new MemoryStore().put('m1/model.tar.gz', archive);
      const reports: DownloadProgress[] = [];
      await store.downloadInto(staging.path, 'm1', {}, undefined, (p) => reports.push(p));
      const size = archive.length;
      expect(reports).toEqual([expect.objectContaining({ bytes: size, totalBytes: size, done: true })]);
      const failed: DownloadProgress[] = [];
      await effectError(
        new MemoryStore('other').downloadInto(staging.path, 'm1', {}, undefined, (p) => failed.push(p)),
      );
      expect(failed).toEqual([]);
    });
  });

  describe('limits', () => {
    it('fails for good before fetching anything when the listed sizes pass the model cap', async () => {
      const store = new MemoryStore().put('m1/a', 'x'.repeat(600)).put('m1/b', 'y'.repeat(600));
      const limits = { ...defaultDownloadLimits, maxModelBytes: 1000 };
      const error = await effectError(download(store, 'm1', { limits }));
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(store.reads).toEqual([]);
    });
  });
});
