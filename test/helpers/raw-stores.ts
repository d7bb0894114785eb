/**
 * Four stores played by a raw server on 127.0.0.1 (S3 through the AWS SDK, GCS through our requests, Azure Blob
 * through the Azure SDK, the Hub through our API requests and the download engine): each store's URI, which of its
 * requests lists and which reads, a good answer listing the one object `m/a` of `listedBytes`, the pieces of an
 * endless page and of an endless error body, and the provider pointed at the server.
 */
import type { ServerResponse } from 'node:http';
import { hfStorage } from '../../src/storage/hub/hf-storage';
import type { DownloadLimits } from '../../src/storage/download-limits';
import { azureBlobStorage } from '../../src/storage/object-store/azure-blob';
import { gcsStorage } from '../../src/storage/object-store/gcs';
import { s3Credentials } from '../../src/storage/object-store/s3-credentials';
import { s3Storage } from '../../src/storage/object-store/s3';
import type { StorageProvider } from '../../src/ports';
import type { EndlessBody } from './endless-answer';

/** The size every good listing gives its one object. */
export const listedBytes = 10;
const sha = 'c'.repeat(40);

/** Which of a store's requests a test answers endlessly. */
export type Route = 'listing' | 'read';

/** One store: its URI, how its requests look, a good one-object listing, the endless pieces of an answer. */
export interface Store {
  readonly uri: (base: string) => string;
  readonly routeOf: (url: URL) => Route | 'other';
  /** A listing of the one object `m/a` of `listedBytes` (and for the Hub, the revision answer too). */
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
  `<Contents><Key>m/a</Key><Size>${listedBytes}</Size><ETag>"v"</ETag></Contents></ListBucketResult>`;
const azurePage =
  '<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x" ContainerName="container">' +
  `<Prefix>m/</Prefix><Blobs><Blob><Name>m/a</Name><Properties><Content-Length>${listedBytes}</Content-Length>` +
  '<Etag>"v"</Etag></Properties></Blob></Blobs><NextMarker/></EnumerationResults>';

export const stores: Readonly<Record<string, Store>> = {
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
        .end(JSON.stringify({ items: [{ name: 'm/a', size: String(listedBytes), generation: '1' }] })),
    listing: {
      type: json,
      head: '{"kind":"storage#objects","items":[',
      filler: '{"name":"m/x","size":"1","generation":"1"},',
    },
    errorBody: { type: json, head: '{"error":{"message":"', filler: 'no access ' },
    provider: (base, limits) => gcsStorage({ endpoint: base, requestRetries: 0, limits }),
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
        : [{ type: 'file', oid: 'b'.repeat(40), size: listedBytes, path: 'a' }];
      response.writeHead(200, { 'content-type': json }).end(JSON.stringify(body));
    },
    listing: { type: json, head: '[', filler: '{"type":"file","oid":"x","size":1,"path":"x"},' },
    errorBody: { type: json, head: '{"error":"', filler: 'no access ' },
    provider: (base, limits) =>
      hfStorage({ endpoint: base, limits, timeoutMs: 10_000, streams: 1, maxResumes: 1 }),
  },
};
