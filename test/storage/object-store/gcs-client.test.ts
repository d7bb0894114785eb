/** Tests of gcsClient against the GCS JSON API stand-in: paging, ranged and generation-pinned reads, errors by kind. */
import { isLeft, isRight } from 'fp-ts/Either';
import type { ListingBounds, ObjectLocation, StoredObject } from '../../../src/storage/object-store/client';
import { storageRequestTries } from '../../../src/core/retry-policy';
import { gcsClient, gcsLocation } from '../../../src/storage/object-store/gcs';
import { listingBounds } from '../../../src/storage/object-store/listing-bounds';
import { startGcsStandIn, type GcsStandIn } from '../../../src/testing/gcs-stand-in';
import { effectError } from '../../helpers/effect-error';
import { useHttpServers } from '../../helpers/http-servers';

const never = new AbortController().signal;
const bounds = (): ListingBounds => listingBounds('the test listing', { maxModelFiles: 10_000 });

const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
};

const bytes = async (chunks: AsyncIterable<Uint8Array>): Promise<string> =>
  Buffer.concat((await collect(chunks)).map((chunk) => Buffer.from(chunk))).toString();

const at = (bucket: string, prefix: string): ObjectLocation => ({
  bucket,
  prefix,
  display: `gs://${bucket}/${prefix}`,
});

let gcs: GcsStandIn;
beforeAll(async () => {
  gcs = await startGcsStandIn({ maxPageSize: 3 });
});
afterAll(() => gcs.close());

const client = () => gcsClient({ endpoint: gcs.url });
const serve = useHttpServers();

describe('gcsLocation', () => {
  it('takes the bucket and the prefix as written, percent signs and all', () => {
    expect(gcsLocation('gs://models/m1/v%201')).toEqual({
      _tag: 'Right',
      right: { bucket: 'models', prefix: 'm1/v%201', display: 'gs://models/m1/v%201' },
    });
    expect(gcsLocation('gs://models')).toMatchObject({ right: { bucket: 'models', prefix: '' } });
  });

  it('refuses a bucket name GCS would refuse, without quoting what may be user info', () => {
    const bad = gcsLocation('gs://user:pw-secret@models/m1');
    expect(isLeft(bad) && bad.left).toMatch(/not a GCS bucket name/);
    expect(JSON.stringify(bad)).not.toContain('pw-secret');
    expect(isRight(gcsLocation('gs://Models/m1'))).toBe(false);
  });
});

describe('gcsClient.list', () => {
  it('pages through every object under the prefix with its size and generation', async () => {
    const versions = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((name) =>
      gcs.put('paged', `m/${name}`, name.repeat(3)),
    );
    gcs.put('paged', 'other/x', 'x');
    const listed = await collect(client().list(at('paged', 'm/'), never, bounds()));
    expect(listed.map((o) => o.key)).toEqual(['m/a', 'm/b', 'm/c', 'm/d', 'm/e', 'm/f', 'm/g']);
    expect(listed[0]).toEqual({ key: 'm/a', size: 3, version: versions[0]!.generation });
    const pages = gcs.requests.filter((r) => r.path === '/storage/v1/b/paged/o');
    expect(pages.map((r) => r.query.pageToken !== undefined)).toEqual([false, true, true]);
  });

  it('fails permanently with not-found naming the bucket when it does not exist', async () => {
    const error = await effectError(collect(client().list(at('no-such-bucket', 'm'), never, bounds())));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('gs://no-such-bucket/m');
    expect(error.message).toContain('The specified bucket does not exist');
  });

  it('fails permanently with HTTP 403 when access is denied', async () => {
    gcs.put('locked', 'm/a', 'a');
    gcs.forbid('locked');
    const error = await effectError(collect(client().list(at('locked', 'm'), never, bounds())));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).toMatch(/access denied.*forbidden/);
  });

  it('fails retryably on a 503 and on a refused connection', async () => {
    gcs.put('flaky', 'm/a', 'a');
    gcs.injectFault('list', { status: 503 });
    const once = gcsClient({ endpoint: gcs.url, requestRetries: 0 });
    const unavailable = await effectError(collect(once.list(at('flaky', 'm'), never, bounds())));
    expect(unavailable).toMatchObject({ kind: 'http-status', status: 503, retryable: true });
    const closed = gcsClient({ endpoint: 'http://127.0.0.1:9' });
    const refused = await effectError(collect(closed.list(at('flaky', 'm'), never, bounds())));
    expect(refused).toMatchObject({ kind: 'network', retryable: true });
  });

  it("carries a push-back's Retry-After, to a list page and to a read, for the store's pause and the loader", async () => {
    const busy = await serve((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      response.end(JSON.stringify({ error: { code: 429, message: 'The rate of requests is too high.' } }));
    });
    const pushedBack = gcsClient({ endpoint: busy.url, requestRetries: 0 });
    const listing = await effectError(collect(pushedBack.list(at('busy', 'm'), never, bounds())));
    expect(listing).toMatchObject({ kind: 'http-status', status: 429, retryAfterMs: 7000 });
    const object = { key: 'm/a', size: 1, version: '1' };
    const read = await effectError(pushedBack.read(at('busy', 'm'), object, 0, never));
    expect(read).toMatchObject({ kind: 'http-status', status: 429, retryAfterMs: 7000 });
  });

  it('takes an error body whose error is null or no object for the status it came with, not a broken answer', async () => {
    for (const body of [{ error: null }, { error: 7 }, { error: { message: null, errors: 'x' } }]) {
      const refusing = await serve((_request, response) => {
        response.writeHead(403, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      });
      const once = gcsClient({ endpoint: refusing.url, requestRetries: 0 });
      const error = await effectError(collect(once.list(at('locked', 'm'), never, bounds())));
      expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    }
  });

  it('retries a 500 list page at once when asked to (requestRetries), not a push-back (the store pressure waits that out)', async () => {
    gcs.put('flaky', 'm/a', 'a');
    gcs.injectFault('list', { status: 500 });
    const retrying = gcsClient({ endpoint: gcs.url, requestRetries: 1 });
    expect((await collect(retrying.list(at('flaky', 'm'), never, bounds()))).map((o) => o.key)).toEqual([
      'm/a',
    ]);
  });

  it('tries a list page storageRequestTries times by default before it fails', async () => {
    gcs.put('flaky', 'm/a', 'a');
    gcs.injectFault('list', { status: 500 }, storageRequestTries - 1);
    expect((await collect(client().list(at('flaky', 'm'), never, bounds()))).map((o) => o.key)).toEqual([
      'm/a',
    ]);
    gcs.injectFault('list', { status: 500 }, storageRequestTries);
    const error = await effectError(collect(client().list(at('flaky', 'm'), never, bounds())));
    expect(error).toMatchObject({ kind: 'http-status', status: 500, retryable: true });
  });

  it('fails with aborted when the signal aborts', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await effectError(collect(client().list(at('paged', 'm/'), controller.signal, bounds())));
    expect(error).toMatchObject({ kind: 'aborted' });
  });
});

describe('gcsClient.read', () => {
  const listedObject = async (bucket: string, key: string): Promise<StoredObject> => {
    const [object] = await collect(client().list(at(bucket, key), never, bounds()));
    return object!;
  };

  it('reads the whole object, then from an offset with a Range header, pinned to the listed generation', async () => {
    gcs.put('reads', 'm/weights.bin', '0123456789');
    const object = await listedObject('reads', 'm/weights.bin');
    const reader = client();
    expect(await bytes(await reader.read(at('reads', 'm'), object, 0, never))).toBe('0123456789');
    expect(await bytes(await reader.read(at('reads', 'm'), object, 6, never))).toBe('6789');
    const reads = gcs.requests.filter((r) => r.path === '/storage/v1/b/reads/o/m/weights.bin');
    expect(reads.map((r) => [r.range, r.query.generation, r.query.alt])).toEqual([
      [undefined, object.version, 'media'],
      ['bytes=6-', object.version, 'media'],
    ]);
  });

  it('fails retryably with changed when the object was replaced or deleted since it was listed', async () => {
    gcs.put('reads', 'm/moving.bin', 'old bytes');
    const object = await listedObject('reads', 'm/moving.bin');
    gcs.put('reads', 'm/moving.bin', 'new bytes');
    const replaced = await effectError(client().read(at('reads', 'm'), object, 4, never).then(bytes));
    expect(replaced).toMatchObject({ kind: 'changed', retryable: true });
    expect(replaced.message).toContain('gs://reads/m/moving.bin');
    gcs.remove('reads', 'm/moving.bin');
    const deleted = await effectError(client().read(at('reads', 'm'), object, 0, never).then(bytes));
    expect(deleted).toMatchObject({ kind: 'changed', retryable: true });
  });

  it('fails retryably with network when the connection drops mid-body, after handing on the bytes that came', async () => {
    gcs.put('reads', 'm/cut.bin', 'x'.repeat(100_000));
    const object = await listedObject('reads', 'm/cut.bin');
    gcs.injectFault('media', { cutAfterBytes: 40_000 });
    const received: Uint8Array[] = [];
    const reading = (async () => {
      for await (const chunk of await client().read(at('reads', 'm'), object, 0, never)) received.push(chunk);
    })();
    expect(await effectError(reading)).toMatchObject({ kind: 'network', retryable: true });
    expect(received.reduce((sum, c) => sum + c.byteLength, 0)).toBe(40_000);
  });

  it('fails retryably with timeout when a body sends nothing more, after handing on the bytes that came', async () => {
    gcs.put('reads', 'm/stalled.bin', 'x'.repeat(100_000));
    const object = await listedObject('reads', 'm/stalled.bin');
    gcs.injectFault('media', { stallAfterBytes: 40_000 });
    const received: Uint8Array[] = [];
    const reader = gcsClient({ endpoint: gcs.url, timeoutMs: 300 });
    const reading = (async () => {
      for await (const chunk of await reader.read(at('reads', 'm'), object, 0, never)) received.push(chunk);
    })();
    const error = await effectError(reading);
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('no data received for 300 ms');
    expect(received.reduce((sum, c) => sum + c.byteLength, 0)).toBe(40_000);
  });

  it('stops with aborted when the signal aborts mid-body', async () => {
    gcs.put('reads', 'm/big.bin', 'y'.repeat(4_000_000));
    const object = await listedObject('reads', 'm/big.bin');
    const controller = new AbortController();
    const reading = (async () => {
      for await (const _ of await client().read(at('reads', 'm'), object, 0, controller.signal)) {
        controller.abort();
      }
    })();
    expect(await effectError(reading)).toMatchObject({ kind: 'aborted' });
  });
});
