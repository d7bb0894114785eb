/**
 * A listing against a store that pushes back (503, SlowDown): its pages go through the store's pressure as reads
 * do (docs/storage.md, "When a store pushes back"): a pause, then the page asked again, never at once.
 */
import type { ObjectStoreClient } from '../../../src/storage/object-store/client';
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import { gcsClient } from '../../../src/storage/object-store/gcs';
import { hfStorage } from '../../../src/storage/hub/hf-storage';
import { startHubStandIn } from '../../../src/testing/hub-stand-in';
import { planObjects } from '../../../src/storage/object-store/plan-objects';
import { s3ObjectClient, s3SdkClient } from '../../../src/storage/object-store/s3';
import { StorePressure } from '../../../src/storage/store-pressure';
import { startGcsStandIn, type GcsStandIn } from '../../../src/testing/gcs-stand-in';
import { effectError } from '../../helpers/effect-error';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';

const never = new AbortController().signal;
const location = { bucket: 'models', prefix: 'm/', display: 'the test bucket' };
const cap = { maxModelFiles: 100 };
const pauseMs = 100;
const pressure = () => new StorePressure({ maxAttempts: 8, baseMs: pauseMs, maxMs: pauseMs });

/** `client`, whose store starts pushing back (`pushBack()`) once the listing's first page is read. */
const pushingBackAfterPageOne = (client: ObjectStoreClient, pushBack: () => void): ObjectStoreClient => ({
  ...client,
  async *list(at, signal, bounds) {
    let objects = 0;
    for await (const object of client.list(at, signal, bounds)) {
      if (objects++ === 0) pushBack();
      yield object;
    }
  },
});

describe('a listing against a store that pushes back', () => {
  const serve = useHttpServers();
  const staging = useTempDir('listing-pushback');
  let gcs: GcsStandIn;
  beforeAll(async () => {
    gcs = await startGcsStandIn({ maxPageSize: 1 });
    for (const name of ['m/a', 'm/b', 'm/c']) gcs.put('models', name, name);
  });
  afterAll(() => gcs.close());
  const gcsLists = () => gcs.requests.filter((request) => request.path.endsWith('/o')).length;

  it('GCS: waits out the pause and asks a later page again, never at once (3 push-backs failed the download)', async () => {
    const told = pressure();
    const client = pushingBackAfterPageOne(gcsClient({ endpoint: gcs.url }), () =>
      gcs.injectFault('list', { status: 503 }, 3),
    );
    const started = performance.now();
    const plan = await planObjects(client, location, never, cap, undefined, told);
    expect(plan.map((item) => item.path)).toEqual(['a', 'b', 'c']);
    // Three pauses of at least the base, one after each push-back.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * pauseMs);
    // Told: the store's connections were halved (and one given back by the answers after).
    expect(told.limit).toBeLessThan(Infinity);
  });

  it("GCS: a push-back to the first page fails the attempt at once, the store's pause told", async () => {
    const told = pressure();
    const before = gcsLists();
    gcs.injectFault('list', { status: 503 }, 3);
    const error = await effectError(
      planObjects(gcsClient({ endpoint: gcs.url }), location, never, cap, undefined, told),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 503, retryable: true });
    expect(gcsLists() - before).toBe(1);
    expect(told.limit).toBe(1);
    gcs.injectFault('list', { status: 503 }, 0);
  });

  it("S3: waits out the pause and asks a later page again (the SDK's own retries spent)", async () => {
    let pushBacks = 2;
    const contents = (key: string) => `<Contents><Key>${key}</Key><Size>1</Size><ETag>"1"</ETag></Contents>`;
    const store = await serve((request, response) => {
      const url = new URL(request.url ?? '/', 'http://store');
      const token = url.searchParams.get('continuation-token');
      if (token === 'page-2' && pushBacks-- > 0) {
        response.writeHead(503, { 'content-type': 'application/xml' });
        response.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Slow down.</Message></Error>',
        );
        return;
      }
      const page =
        token === null
          ? `${contents('m/a')}<IsTruncated>true</IsTruncated><NextContinuationToken>page-2</NextContinuationToken>`
          : `${contents('m/b')}<IsTruncated>false</IsTruncated>`;
      response.writeHead(200, { 'content-type': 'application/xml' });
      response.end(
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>models</Name>${page}</ListBucketResult>`,
      );
    });
    const client = s3ObjectClient(
      s3SdkClient({
        endpoint: store.url,
        region: 'us-east-1',
        addressing: 'path',
        credentials: 'anonymous',
        maxAttempts: 1,
      }),
    );
    const told = pressure();
    const plan = await planObjects(client, location, never, cap, undefined, told);
    expect(plan.map((item) => item.path)).toEqual(['a', 'b']);
    expect(told.limit).toBeLessThan(Infinity);
  });

  it("Azure Blob: waits out the pause and asks a later page again (the SDK's own retries spent)", async () => {
    let pushBacks = 2;
    const blob = (name: string) =>
      `<Blob><Name>${name}</Name><Properties><Content-Length>1</Content-Length><Etag>"1"</Etag>` +
      '<BlobType>BlockBlob</BlobType></Properties></Blob>';
    const store = await serve((request, response) => {
      const url = new URL(request.url ?? '/', 'http://store');
      if (url.searchParams.get('comp') !== 'list') {
        response.writeHead(200, { 'content-length': '1', etag: '"1"', 'x-ms-blob-type': 'BlockBlob' });
        response.end('x');
        return;
      }
      const marker = url.searchParams.get('marker');
      if (marker === 'page-2' && pushBacks-- > 0) {
        response.writeHead(503, { 'content-type': 'application/xml', 'x-ms-error-code': 'ServerBusy' });
        response.end(
          '<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Busy.</Message></Error>',
        );
        return;
      }
      const [name, next] = marker === null ? ['m1/a', 'page-2'] : ['m1/b', ''];
      response.writeHead(200, { 'content-type': 'application/xml' });
      response.end(
        `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ContainerName="models"><Blobs>${blob(name)}</Blobs>` +
          `<NextMarker>${next}</NextMarker></EnumerationResults>`,
      );
    });
    const retry = { maxAttempts: 8, baseMs: pauseMs, maxMs: pauseMs };
    const storage = azureBlobStorage({ endpoints: [store.url], sdkRetries: 0, retry });
    await storage.download(`${store.url}/acct/models/m1`, staging.path, never);
    expect(pushBacks).toBe(-1);
  });

  it("the Hub: waits out the pause and asks a tree page again, the commit's request having been answered", async () => {
    const hub = await startHubStandIn({ pageSize: 1 });
    try {
      hub.commit('org/m1', { 'a.json': 'a', 'b.json': 'b' });
      hub.injectFault('tree', { status: 503 }, 2);
      const retry = { maxAttempts: 8, baseMs: pauseMs, maxMs: pauseMs };
      await hfStorage({ endpoint: hub.url, retry }).download('hf://org/m1', staging.path, never);
      const trees = hub.requests.filter((request) => request.path.includes('/tree/'));
      expect(trees).toHaveLength(4);
    } finally {
      await hub.close();
    }
  });
});
