/**
 * Tests of S3's ranged reads by undici (s3RequestHandler): against s3rver behind a fault proxy that checks every SigV4
 * signature, a ranged GetObject goes by undici, signed as the SDK signed it, and its body flows chunk by chunk
 * (FlowingBody); the store's refusals keep their meaning; every other request stays on the SDK's handler.
 */
import { Agent, type Dispatcher } from 'undici';
import { readChunks, type FlowingBody } from '../../../src/net';
import type { ObjectLocation, StoredObject } from '../../../src/storage/object-store/client';
import { listingBounds } from '../../../src/storage/object-store/listing-bounds';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { s3ObjectClient, s3SdkClient } from '../../../src/storage/object-store/s3';
import { effectError } from '../../helpers/effect-error';
import { startFaultProxy, type FaultProxy } from '../../helpers/fault-proxy';
import { checkSignatures, startS3Server, type S3Server } from '../../helpers/s3-server';

let server: S3Server;
let proxy: FaultProxy;
const pool = new Agent();
const rangedGets: URL[] = [];
const counted = (url: URL): Dispatcher => (rangedGets.push(url), pool);

// Each MiB stamped with its index: a range read from the wrong place shows.
const weights = Buffer.concat(Array.from({ length: 3 }, (_, i) => Buffer.alloc(2 ** 20, `mib-${i}-`)));
const location: ObjectLocation = { bucket: 'models', prefix: 'big/', display: 's3://models/big/' };

beforeAll(async () => {
  server = await startS3Server();
  proxy = await startFaultProxy(server.url);
  await server.createBucket('models');
  await server.put('models', { 'big/weights.bin': weights });
}, 120_000);

beforeEach(() => {
  proxy.reset();
  proxy.inject(checkSignatures(server.keys));
  rangedGets.length = 0;
});

afterAll(async () => {
  await pool.close();
  await proxy?.close();
  await server?.close();
});

const client = (dispatcherFor: (url: URL) => Dispatcher | undefined = counted) =>
  s3ObjectClient(
    s3SdkClient({
      endpoint: proxy.url,
      region: 'us-east-1',
      addressing: 'path',
      credentials: s3Credentials(
        { anonymous: false },
        { AWS_ACCESS_KEY_ID: server.keys.accessKeyId, AWS_SECRET_ACCESS_KEY: server.keys.secretAccessKey },
      ),
      maxAttempts: 1,
      dispatcherFor,
    }),
  );

/** The listed object, as the downloader would have it. */
const listed = async (): Promise<StoredObject> => {
  const bounds = listingBounds('the test listing', { maxModelFiles: 10_000 });
  for await (const object of client().list(location, new AbortController().signal, bounds)) return object;
  throw new Error('nothing listed');
};

/** A reader gathering each chunk as it comes, which makes the body wait now and then. */
const gathering = () => {
  const chunks: Buffer[] = [];
  const take = (chunk: Uint8Array) => {
    chunks.push(Buffer.from(chunk));
    return chunks.length % 3 === 0 ? new Promise<void>((resolve) => setTimeout(resolve, 2)) : undefined;
  };
  return { take, bytes: () => Buffer.concat(chunks) };
};

describe('s3RequestHandler', () => {
  it('sends a ranged GetObject by undici, signed, and its body flows chunk by chunk', async () => {
    const object = await listed();
    const start = 2 ** 20 - 5;
    const end = 2 * 2 ** 20 + 7;
    const body = await client().read(location, object, start, new AbortController().signal, end);
    expect((body as FlowingBody).readable).toBeDefined();
    const { take, bytes } = gathering();
    await readChunks(body, take);
    expect(bytes().equals(weights.subarray(start, end))).toBe(true);
    expect(rangedGets.map((url) => url.pathname)).toEqual(['/models/big/weights.bin']);
    // The proxy checked the signature (it answers 403 to a wrong one): undici sent the SDK's headers.
    const [get] = proxy.requests.filter(
      (r) => r.method === 'GET' && r.url.startsWith('/models/big/weights.bin'),
    );
    expect(get?.headers['authorization']).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(get?.headers['range']).toBe(`bytes=${start}-${end - 1}`);
  });

  it('reads the body as chunks too, when the reader iterates it', async () => {
    const object = await listed();
    const body = await client().read(location, object, 10, new AbortController().signal, 2 ** 20 + 10);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(Buffer.from(chunk));
    expect(Buffer.concat(chunks).equals(weights.subarray(10, 2 ** 20 + 10))).toBe(true);
  });

  it('keeps the listing and whole-object reads on the SDK handler', async () => {
    const object = await listed();
    const body = await client().read(location, object, 0, new AbortController().signal);
    let size = 0;
    for await (const chunk of body) size += chunk.byteLength;
    expect(size).toBe(weights.byteLength);
    expect(rangedGets).toEqual([]);
  });

  it('reads a changed object as `changed` by undici (If-Match refused)', async () => {
    const object = await listed();
    const stale = { ...object, version: '"0123456789abcdef0123456789abcdef"' };
    const error = await effectError(client().read(location, stale, 100, new AbortController().signal, 200));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(rangedGets).toHaveLength(1);
  });

  it('refuses for good what the store refuses for good, with the store’s words (a bad signature)', async () => {
    const object = await listed();
    proxy.reset();
    proxy.inject({
      when: (request) => request.headers.range !== undefined,
      answer: () => ({
        status: 403,
        headers: { 'content-type': 'application/xml' },
        body: '<?xml version="1.0"?><Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>',
      }),
    });
    const error = await effectError(client().read(location, object, 100, new AbortController().signal, 200));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).toContain('SignatureDoesNotMatch');
  });

  it('goes by the SDK handler when no dispatcher serves the URL', async () => {
    const object = await listed();
    const body = await client(() => undefined).read(location, object, 100, new AbortController().signal, 200);
    expect(rangedGets).toEqual([]);
    let size = 0;
    for await (const chunk of body) size += chunk.byteLength;
    expect(size).toBe(100);
  });
});
