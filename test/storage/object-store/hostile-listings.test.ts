/**
 * Object stores that answer a listing with something no listing says, or one that never ends: S3 (the AWS SDK),
 * GCS (@google-cloud/storage) and Azure Blob (@azure/storage-blob), each pointed at a server on 127.0.0.1 that
 * answers what the test says. Whatever the shape, a download ends in an EffectError naming the store (or in the
 * objects it validly listed); a page token given twice is a circle; a listing past --max-model-files ends there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { EffectError } from '../../../src/core/errors';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import { gcsStorage } from '../../../src/storage/object-store/gcs';
import { maxEmptyPages } from '../../../src/storage/object-store/listing-bounds';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { s3Storage } from '../../../src/storage/object-store/s3';
import { startHttpServer, type RunningHttpServer } from '../../../src/testing/http-server';
import type { StorageProvider } from '../../../src/ports';

jest.setTimeout(60_000);

/** One listing page as the test wants it: its items (any JSON value) and the next page's token. */
interface Page {
  readonly items: ReadonlyArray<unknown>;
  readonly next?: string;
}

const xmlText = (value: unknown): string =>
  String(value).replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);

/** An item as XML elements (a null or a scalar as bare text: what a broken store might send). */
const xmlItem = (tag: string, item: unknown, fields: Readonly<Record<string, string>>): string => {
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    return `<${tag}>${xmlText(item)}</${tag}>`;
  const record = item as Record<string, unknown>;
  const inner = Object.entries(fields)
    .filter(([from]) => record[from] !== undefined)
    .map(([from, to]) => `<${to}>${xmlText(record[from])}</${to}>`)
    .join('');
  return `<${tag}>${inner}</${tag}>`;
};

const blobName = (name: unknown): string => (name === undefined ? '' : `<Name>${xmlText(name)}</Name>`);

/** How each store's listing page looks on the wire, and how a test names a model in it. */
const stores = {
  s3: {
    uri: () => 's3://bucket/m',
    page: ({ items, next }: Page) =>
      `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><Prefix>m/</Prefix>` +
      `<KeyCount>${items.length}</KeyCount><IsTruncated>${next !== undefined}</IsTruncated>` +
      (next === undefined ? '' : `<NextContinuationToken>${xmlText(next)}</NextContinuationToken>`) +
      items
        .map((item) => xmlItem('Contents', item, { name: 'Key', size: 'Size', version: 'ETag' }))
        .join('') +
      `</ListBucketResult>`,
    contentType: 'application/xml',
    isListing: (url: URL) => url.searchParams.get('list-type') === '2',
    provider: (url: string): StorageProvider =>
      s3Storage({
        endpoint: url,
        region: 'us-east-1',
        addressing: 'path',
        credentials: s3Credentials({ anonymous: true }, {}),
        maxAttempts: 1,
        limits: cliDownloadLimits,
      }),
  },
  gcs: {
    uri: () => 'gs://bucket/m',
    page: ({ items, next }: Page) =>
      JSON.stringify({
        kind: 'storage#objects',
        items,
        ...(next === undefined ? {} : { nextPageToken: next }),
      }),
    contentType: 'application/json',
    isListing: (url: URL) => url.pathname === '/storage/v1/b/bucket/o',
    provider: (url: string): StorageProvider =>
      gcsStorage({ endpoint: url, requestRetries: 0, limits: cliDownloadLimits }),
  },
  azure: {
    uri: (url: string) => `${url}/account/container/m`,
    page: ({ items, next }: Page) =>
      `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x" ContainerName="container">` +
      `<Prefix>m/</Prefix><Blobs>` +
      items
        .map((item) =>
          typeof item === 'object' && item !== null && !Array.isArray(item)
            ? `<Blob>${blobName((item as Record<string, unknown>)['name'])}` +
              `${xmlItem('Properties', item, { size: 'Content-Length', version: 'Etag' })}</Blob>`
            : `<Blob>${xmlText(item)}</Blob>`,
        )
        .join('') +
      `</Blobs><NextMarker>${next === undefined ? '' : xmlText(next)}</NextMarker></EnumerationResults>`,
    contentType: 'application/xml',
    isListing: (url: URL) => url.searchParams.get('comp') === 'list',
    provider: (url: string): StorageProvider =>
      azureBlobStorage({ endpoints: [url], sdkRetries: 0, limits: cliDownloadLimits }),
  },
} as const;

type StoreName = keyof typeof stores;

let server: RunningHttpServer;
let pageFor: (listing: number) => Page | string = () => ({ items: [] });
let listings = 0;
let dir: string;

beforeAll(async () => {
  server = await startHttpServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://store');
    const store = Object.values(stores).find((candidate) => candidate.isListing(url));
    if (store === undefined) return void response.writeHead(404).end();
    const page = pageFor(listings++);
    const body = typeof page === 'string' ? page : store.page(page);
    response.writeHead(200, { 'Content-Type': store.contentType }).end(body);
  });
});
afterAll(() => server.close());
beforeEach(async () => {
  listings = 0;
  dir = await mkdtemp(join(tmpdir(), 'modelsync-hostile-listing-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** The download of the store's model: undefined when it succeeded, else the EffectError it failed with. */
const outcome = async (store: StoreName): Promise<EffectError | undefined> => {
  const { uri, provider } = stores[store];
  try {
    await provider(server.url).download(uri(server.url), dir, new AbortController().signal);
    return undefined;
  } catch (error) {
    if (!(error instanceof EffectError)) throw error;
    return error;
  }
};

const storeNames = Object.keys(stores) as StoreName[];

/** Items of every shape a store's answer can be fed: nulls, scalars, lists, objects with any field types. */
const anyItem = fc.oneof(
  fc.constant(null),
  fc.constant({}),
  fc.integer(),
  fc.string(),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.record(
    {
      name: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.constant('m/ok')),
      size: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.string(), fc.constant(null), fc.double()),
      version: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    },
    { requiredKeys: [] },
  ),
);

describe.each(storeNames)('a %s listing', (store) => {
  it('of items of any shape ends in an EffectError or the valid objects, never a raw error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyItem, { maxLength: 6 }), async (items) => {
        listings = 0;
        pageFor = () => ({ items });
        const error = await outcome(store);
        // Objects it did list are fetched next, and the server has none: not-found, or a kind naming the answer.
        if (error !== undefined) expect(error.kind).not.toBe('unknown');
      }),
      { numRuns: 25 },
    );
  });

  it('that gives a page token it gave before fails for good, saying it goes in a circle', async () => {
    pageFor = (listing) => ({
      items: [{ name: `m/f${listing}`, size: 1, version: 'v' }],
      next: `token-${listing % 3}`,
    });
    const error = await outcome(store);
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
    expect(error?.message).toContain('goes in a circle');
    expect(listings).toBeLessThanOrEqual(5);
  });

  it('that never ends stops at --max-model-files, having asked for no more pages than that allows', async () => {
    pageFor = (listing) => ({
      items: Array.from({ length: 100 }, (_, i) => ({ name: `m/p${listing}-${i}`, size: 1, version: 'v' })),
      next: `token-${listing}`,
    });
    const error = await outcome(store);
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error?.message).toContain('--max-model-files');
    expect(listings).toBeLessThanOrEqual(cliDownloadLimits.maxModelFiles / 100 + 1);
  });

  it('of empty pages with fresh tokens forever ends too', async () => {
    pageFor = (listing) => ({ items: [], next: `t${listing}` });
    const error = await outcome(store);
    expect(error).toMatchObject({ retryable: false });
    expect(error?.message).toContain('pages with no objects in them');
    expect(listings).toBeLessThanOrEqual(maxEmptyPages + 2);
  });
});

it('an S3 endpoint answering 200 with an HTML page is no listing, not an empty bucket', async () => {
  pageFor = () => '<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>';
  const error = await outcome('s3');
  expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
  expect(error?.message).toContain('no ListBucketResult');
});

it('an S3 listing its client cannot parse (nested past its stack) is an invalid answer, without the parser in the words', async () => {
  pageFor = () => `<?xml version="1.0"?><ListBucketResult>${'<a>'.repeat(200_000)}</ListBucketResult>`;
  const error = await outcome('s3');
  expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
  expect(error?.message).toContain('HTTP 200 with an answer that is no S3 answer');
  expect(error?.message).not.toMatch(/stack|RangeError/);
});

it('a GCS listing of a name that is no valid text (a lone surrogate) fails for good, naming the item', async () => {
  // JSON carries "\ud800" as it is: no file system or URL takes it (encodeURIComponent threw a URIError on it).
  pageFor = () => ({ items: [{ name: 'm/a\ud800', size: 1, version: 'v' }] });
  const error = await outcome('gcs');
  expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
  expect(error?.message).toContain('item 0 has a key that is no valid text');
});
