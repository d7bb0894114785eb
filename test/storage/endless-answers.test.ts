/**
 * Store answers that never end, announce more than an answer may hold, or trickle: a listing page, a Hub revision, an
 * error answer to a read. S3 (the AWS SDK), GCS (our requests), Azure Blob (the Azure SDK) and the Hub, each pointed
 * at a server on 127.0.0.1 that writes with backpressure and counts what the client's side took. Each answer is
 * bounded while it streams: the download fails `too-large` (or `timeout` for a trickle) having been sent at most the
 * cap and what the sockets' buffers hold, however fast the machine.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hfStorage } from '../../src/storage/hub/hf-storage';
import { httpFileFetcher } from '../../src/storage/http/http-file';
import { defaultDownloadLimits, type DownloadLimits } from '../../src/storage/download-limits';
import { azureBlobStorage } from '../../src/storage/object-store/azure-blob';
import { gcsStorage } from '../../src/storage/object-store/gcs';
import { s3Credentials } from '../../src/storage/object-store/s3-credentials';
import { s3Storage } from '../../src/storage/object-store/s3';
import { maxAnswerBytes } from '../../src/storage/store-answer';
import type { StorageProvider } from '../../src/ports';
import { effectError } from '../helpers/effect-error';
import { sendEndless, type EndlessBody, type EndlessRun } from '../helpers/endless-answer';
import { useHttpServers } from '../helpers/http-servers';
import { useTempDir } from '../helpers/temp-dir';

jest.setTimeout(60_000);

const serve = useHttpServers();
const staging = useTempDir('endless-answers');
const never = new AbortController().signal;
const sha = 'c'.repeat(40);

// What a loopback connection can hold in flight beyond what the client read: the sender's and the receiver's socket
// buffers (Linux grows them to 4 and 6 MiB) and the client's own stream buffers.
const socketsHold = 16 * 2 ** 20;

/** Which of a store's requests a test answers endlessly. */
type Route = 'listing' | 'read';

/** One store: its URI, how its requests look, a good one-object listing, the endless pieces of an answer. */
interface Store {
  readonly uri: (base: string) => string;
  readonly routeOf: (url: URL) => Route | 'other';
  /** A listing of the one object `m/a` of 1 byte (and for the Hub, the revision answer too). */
  readonly good: (url: URL, response: ServerResponse) => void;
  readonly listing: Pick<EndlessBody, 'head' | 'filler'> & { readonly type: string };
  readonly errorBody: Pick<EndlessBody, 'head' | 'filler'> & { readonly type: string };
  readonly provider: (base: string, limits: DownloadLimits) => StorageProvider;
}

const xml = 'application/xml';
const json = 'application/json';
const s3Page =
  '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><Prefix>m/</Prefix>' +
  '<KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>' +
  '<Contents><Key>m/a</Key><Size>1</Size><ETag>"v"</ETag></Contents></ListBucketResult>';
const azurePage =
  '<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x" ContainerName="container">' +
  '<Prefix>m/</Prefix><Blobs><Blob><Name>m/a</Name><Properties><Content-Length>1</Content-Length>' +
  '<Etag>"v"</Etag></Properties></Blob></Blobs><NextMarker/></EnumerationResults>';

const stores: Readonly<Record<string, Store>> = {
  s3: {
    uri: () => 's3://bucket/m',
    routeOf: (url) => (url.searchParams.get('list-type') === '2' ? 'listing' : 'read'),
    good: (_url, response) => void response.writeHead(200, { 'content-type': xml }).end(s3Page),
    listing: {
      type: xml,
      head: '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name>',
      filler: '<Contents><Key>m/x</Key><Size>1</Size><ETag>"v"</ETag></Contents>',
    },
    errorBody: { type: xml, head: '<Error><Code>AccessDenied</Code><Message>', filler: 'no access ' },
    provider: (base, limits) =>
      s3Storage({
        endpoint: base,
        region: 'us-east-1',
        addressing: 'path',
        credentials: s3Credentials({ anonymous: true }, {}),
        maxAttempts: 1,
        limits,
      }),
  },
  gcs: {
    uri: () => 'gs://bucket/m',
    routeOf: (url) => (url.pathname === '/storage/v1/b/bucket/o' ? 'listing' : 'read'),
    good: (_url, response) =>
      void response
        .writeHead(200, { 'content-type': json })
        .end(JSON.stringify({ items: [{ name: 'm/a', size: '1', generation: '1' }] })),
    listing: {
      type: json,
      head: '{"kind":"storage#objects","items":[',
      filler: '{"name":"m/x","size":"1","generation":"1"},',
    },
    errorBody: { type: json, head: '{"error":{"message":"', filler: 'no access ' },
    provider: (base, limits) => gcsStorage({ endpoint: base, limits }),
  },
  azure: {
    uri: (base) => `${base}/account/container/m`,
    routeOf: (url) => (url.searchParams.get('comp') === 'list' ? 'listing' : 'read'),
    good: (_url, response) => void response.writeHead(200, { 'content-type': xml }).end(azurePage),
    listing: {
      type: xml,
      head: '<?xml version="1.0" encoding="utf-8"?><EnumerationResults ContainerName="container"><Blobs>',
      filler: '<Blob><Name>m/x</Name><Properties><Content-Length>1</Content-Length></Properties></Blob>',
    },
    errorBody: {
      type: xml,
      head: '<?xml version="1.0"?><Error><Code>AuthorizationFailure</Code><Message>',
      filler: 'no access ',
    },
    provider: (base, limits) => azureBlobStorage({ endpoints: [base], sdkRetries: 0, limits }),
  },
  hub: {
    uri: () => 'hf://org/m',
    routeOf: (url) =>
      url.pathname.startsWith('/api/models/org/m/tree/')
        ? 'listing'
        : url.pathname.startsWith('/org/m/resolve/')
          ? 'read'
          : 'other',
    good: (url, response) => {
      const body = url.pathname.includes('/revision/')
        ? { sha }
        : [{ type: 'file', oid: 'b'.repeat(40), size: 1, path: 'a' }];
      response.writeHead(200, { 'content-type': json }).end(JSON.stringify(body));
    },
    listing: { type: json, head: '[', filler: '{"type":"file","oid":"x","size":1,"path":"x"},' },
    errorBody: { type: json, head: '{"error":"', filler: 'no access ' },
    provider: (base, limits) =>
      hfStorage({
        endpoint: base,
        limits,
        fetchFile: httpFileFetcher({
          connectTimeoutMs: 10_000,
          idleTimeoutMs: 10_000,
          streams: 1,
          maxResumes: 1,
        }),
      }),
  },
};

/** How the endless request is answered: a body that never ends, one announcing a size over the cap, a trickle. */
type Shape = 'endless' | 'announced' | 'trickle';

/** Starts the store's server: `route` answered in `shape`, everything else as a good store would. */
const start = async (store: Store, route: Route, shape: Shape) => {
  const runs: EndlessRun[] = [];
  const server = await serve((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://store');
    if (store.routeOf(url) !== route) return store.good(url, response);
    const { type, ...pieces } = route === 'listing' ? store.listing : store.errorBody;
    runs.push(
      sendEndless(response, {
        status: route === 'listing' ? 200 : 403,
        headers: { 'content-type': type, ...(shape === 'announced' ? { 'content-length': 2 ** 40 } : {}) },
        ...pieces,
        ...(shape === 'trickle' ? { everyMs: 20 } : {}),
      }),
    );
  });
  return { server, served: () => runs.reduce((sum, run) => sum + run.served(), 0), runs };
};

// A trickle far below this rate: the download must end within a window or two of it.
const slowLimits: DownloadLimits = {
  ...defaultDownloadLimits,
  minRate: { bytesPerSecond: 256 * 1024, windowMs: 400 },
};

describe.each(Object.keys(stores))('a %s answer', (name) => {
  const store = stores[name]!;

  it('that never ends fails too-large naming the store, the request and the cap, sent no more than the cap', async () => {
    const { server, served } = await start(store, 'listing', 'endless');
    const error = await effectError(
      store.provider(server.url, defaultDownloadLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toContain('16 MiB');
    expect(error.message).toContain(`GET ${server.url}/`);
    expect(served()).toBeLessThanOrEqual(maxAnswerBytes + socketsHold);
  });

  it('that announces more than the cap is refused before its body is read', async () => {
    const { server, served } = await start(store, 'listing', 'announced');
    const error = await effectError(
      store.provider(server.url, defaultDownloadLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toContain('announces 1 TiB');
    expect(served()).toBeLessThanOrEqual(socketsHold);
  });

  it('to a read that fails with an error body that never ends fails having been sent no more than the cap', async () => {
    const { server, served } = await start(store, 'read', 'endless');
    const error = await effectError(
      store.provider(server.url, defaultDownloadLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error.kind).not.toBe('unknown');
    expect(served()).toBeLessThanOrEqual(maxAnswerBytes + socketsHold);
  });

  it('that trickles forever ends below the minimum rate as a timeout', async () => {
    const { server, runs } = await start(store, 'listing', 'trickle');
    const error = await effectError(
      store.provider(server.url, slowLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('too slow');
    // The client hung up: the trickle is not left running.
    await Promise.all(runs.map((run) => run.closed));
  });
});
