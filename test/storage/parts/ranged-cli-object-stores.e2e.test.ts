/**
 * Ranged downloads from S3 (s3rver), GCS (our stand-in) and Azure Blob (azurite) on the real process (`dist/cli.js`
 * in sync mode, up to the load request), seen from a metered TCP relay in front of each store: a cut range resumed
 * alone, an object replaced mid-way fetched again whole, and one GET per object with `--download-streams 1`.
 */
import { join } from 'node:path';
import { partBytesFor } from '../../../src/storage/parts/part-plan';
import { startGcsStandIn, type GcsStandIn } from '../../../src/testing/gcs-stand-in';
import { useAzurite } from '../../helpers/azurite';
import { killAllCli, type CliFlags } from '../../helpers/cli-process';
import { listTree } from '../../helpers/file-tree';
import { useMeteredRelays, type MeteredRelay, type RelayedRequest } from '../../helpers/metered-relay';
import {
  afterCut,
  compareFile,
  coverage,
  logsOf,
  mebibyte,
  stampedBytes,
  useSyncRuns,
} from '../../helpers/ranged-sync';
import { startS3Server, type S3Server } from '../../helpers/s3-server';
import { useTempDir } from '../../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('ranged-stores');
const relayTo = useMeteredRelays();
const runs = useSyncRuns();
const azurite = useAzurite();

// 40 MiB: 4 ranges of 10 MiB with 2 streams (partBytesFor); the cut object, 64 MiB: 16 of 4 MiB with 8 streams, two
// per connection, so none is split at the start (a split range's owner reads a little past its new end). Azurite
// keeps every version in memory.
const size = 40 * mebibyte;
const cutSize = 64 * mebibyte;
const rangeBytes = partBytesFor(cutSize, 8);
let v1: Buffer;
let v2: Buffer;
let cutV1: Buffer;
let s3: S3Server;
let gcs: GcsStandIn;
beforeAll(async () => {
  [s3, gcs] = await Promise.all([startS3Server(), startGcsStandIn()]);
  await s3.createBucket('models');
  v1 = stampedBytes(size, 'v1');
  v2 = stampedBytes(size, 'v2');
  cutV1 = stampedBytes(cutSize, 'v1');
}, 60_000);
afterAll(async () => {
  await Promise.all([s3?.close(), gcs?.close()]);
});

/** One store as the tests use it: where it listens, how to fill it, how the CLI reaches it, how its requests look. */
interface Store {
  readonly name: string;
  readonly port: () => number;
  /** Stores (or replaces) object `key` of bucket (container) `models`. */
  readonly put: (key: string, data: Buffer) => Promise<void>;
  /** The storageUri of prefix `prefix` of `models` through `relay`. */
  readonly uri: (relay: MeteredRelay, prefix: string) => string;
  readonly flags: (relay: MeteredRelay) => CliFlags;
  readonly env: (relay: MeteredRelay) => Readonly<Record<string, string>>;
  /** The path a read of object `key` goes to (its query aside). */
  readonly objectPath: (key: string) => string;
  readonly isListing: (request: RelayedRequest) => boolean;
  /** What the reason of a `changed` failure says. */
  readonly changed: string;
  /**
   * True for s3rver: it overwrites an object in place, not at once as S3 does, so an attempt that lists during the
   * overwrite may see the object change too, and fail `changed` again.
   */
  readonly overwritesInPlace?: boolean;
}

const pathOf = (request: RelayedRequest): string => decodeURIComponent(request.target.split('?')[0]!);

const stores: ReadonlyArray<Store> = [
  {
    name: 'S3 (s3rver)',
    port: () => s3.port,
    put: (key, data) => s3.put('models', { [key]: data }),
    uri: (_relay, prefix) => `s3://models/${prefix}`,
    flags: () => ({}),
    env: (relay) => ({
      AWS_ENDPOINT_URL: relay.url,
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: s3.keys.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey,
    }),
    objectPath: (key) => `/models/${key}`,
    isListing: (request) => /^\/models\/?\?/.test(request.target),
    changed: 'it changed since it was listed',
    overwritesInPlace: true,
  },
  {
    name: 'GCS (the stand-in)',
    port: () => Number(new URL(gcs.url).port),
    put: (key, data) => Promise.resolve(void gcs.put('models', key, data)),
    uri: (_relay, prefix) => `gs://models/${prefix}`,
    flags: (relay) => ({ 'gcs-endpoint': relay.url }),
    env: () => ({}),
    objectPath: (key) => `/storage/v1/b/models/o/${key}`,
    isListing: (request) => request.target.startsWith('/storage/v1/b/models/o?'),
    changed: 'the object changed or went away since it was listed',
  },
  {
    name: 'Azure Blob (azurite)',
    port: () => Number(new URL(azurite.current.url).port),
    put: (key, data) => azurite.current.put('models', { [key]: data }),
    uri: (relay, prefix) => `${relay.url}/${azurite.current.account}/models/${prefix}`,
    flags: (relay) => ({ 'azure-blob-endpoint': relay.url }),
    env: () => ({ AZURE_STORAGE_ACCESS_KEY: azurite.current.accountKey }),
    objectPath: (key) => `/${azurite.current.account}/models/${key}`,
    isListing: (request) => request.target.includes('comp=list'),
    changed: 'the object changed or went away since it was listed',
  },
];

describe.each(stores)('ranged downloads from $name on the real process', (store) => {
  /** A sync run of `models` (name → prefix) over `streams` per file, through `relay` to the store. */
  const startRun = (relay: MeteredRelay, models: Readonly<Record<string, string>>, streams: number) =>
    runs.start(tmp.path, {
      models: Object.fromEntries(
        Object.entries(models).map(([name, prefix]) => [name, store.uri(relay, prefix)]),
      ),
      flags: { 'download-streams': streams, ...store.flags(relay) },
      env: store.env(relay),
    });

  /** The reads of object `key` that went through `relay`, from its request number `from` on. */
  const readsOf = (relay: MeteredRelay, key: string, from = 0): RelayedRequest[] =>
    relay.requests
      .slice(from)
      .filter((request) => request.method === 'GET' && pathOf(request) === store.objectPath(key));

  it('resumes a range cut mid-way from its last written byte, the other ranges untouched', async () => {
    await store.put('cut/weights.bin', cutV1);
    const relay = await relayTo(store.port(), { bytesPerSecond: 10e6 });
    // The answer to a read of a range past the first is cut half-way.
    const cut = relay.cut({
      afterBytes: rangeBytes / 2,
      request: (request) => (request.range?.first ?? 0) > 0,
    });
    const run = await startRun(relay, { cut: 'cut' }, 8);

    const made = await cut;
    await run.loaded('cut');

    expect(made.bodyBytes).toBeGreaterThan(rangeBytes / 4);
    // One read picks up right after the bytes the cut response delivered; none asks for any of them again.
    const { first } = made.request!.range!;
    expect(afterCut(readsOf(relay, 'cut/weights.bin'), made)).toEqual({
      resumedAt: [first + made.bodyBytes],
      fetchedAgain: [],
    });
    const reads = readsOf(relay, 'cut/weights.bin');
    expect(
      coverage(
        reads.map((read) => read.range),
        cutSize,
      ),
    ).toEqual([[0, cutSize - 1]]);
    expect(relay.bytesToClients).toBeLessThanOrEqual(cutSize + rangeBytes);
    expect(await compareFile(join(run.modelDir, 'cut', 'weights.bin'), cutV1)).toBe('identical');
    expect(logsOf(run.cli, 'cut', 'model step failed; retrying')).toEqual([]);
  });

  it('fails the attempt `changed` when the object is replaced mid-way and loads the new one, fetched whole', async () => {
    await store.put('moving/weights.bin', v1);
    // Two streams at 5 MB/s each: the four ranges are asked for over about 2 s, the last two after the change.
    const relay = await relayTo(store.port(), { bytesPerSecond: 5e6 });
    const run = await startRun(relay, { moving: 'moving' }, 2);
    await relay.whenRelayed(10 * mebibyte);
    await store.put('moving/weights.bin', v2);

    await run.cli.waitForLog((log) => log.msg === 'model step failed; retrying', 20_000);
    relay.setRate(null);
    await run.loaded('moving');

    const retrying = logsOf(run.cli, 'moving', 'model step failed; retrying');
    expect(retrying[0]).toMatchObject({ errorKind: 'changed', attempt: 1 });
    expect(String(retrying[0]!['reason'])).toContain(store.changed);
    expect(retrying.map((log) => log['errorKind'])).toEqual(retrying.map(() => 'changed'));
    if (store.overwritesInPlace !== true) expect(retrying).toHaveLength(1);
    expect(run.cli.logs.indexOf(retrying[0]!)).toBeLessThan(
      run.cli.logs.findIndex((log) => log.msg === 'model loaded'),
    );
    // Each retry lists again; the last one reads every byte of the new object, from 0.
    const listings = relay.requests.flatMap((request, index) => (store.isListing(request) ? [index] : []));
    expect(listings).toHaveLength(retrying.length + 1);
    const retried = readsOf(relay, 'moving/weights.bin', listings.at(-1));
    expect(
      coverage(
        retried.map((read) => read.range),
        size,
      ),
    ).toEqual([[0, size - 1]]);
    expect(await compareFile(join(run.modelDir, 'moving', 'weights.bin'), v2)).toBe('identical');
    expect((await listTree(run.modelDir)).filter((entry) => entry.includes('.tmp-'))).toEqual([]);
  });

  it('reads each object with one GET when --download-streams is 1', async () => {
    await store.put('single/weights.bin', v1);
    await store.put('single/config.pbtxt', Buffer.from('name: "single"'));
    const relay = await relayTo(store.port());
    const run = await startRun(relay, { single: 'single' }, 1);

    await run.loaded('single');

    expect(readsOf(relay, 'single/weights.bin').map((read) => read.range)).toEqual([undefined]);
    expect(readsOf(relay, 'single/config.pbtxt')).toHaveLength(1);
    expect(await compareFile(join(run.modelDir, 'single', 'weights.bin'), v1)).toBe('identical');
  });
});
