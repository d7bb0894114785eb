/**
 * Tests of S3's ranged reads on the direct client (DirectRangeHandler): against s3rver behind a fault proxy that checks
 * every SigV4 signature, a ranged GetObject goes on the direct client, signed as the SDK signed it, and its body is
 * read straight into a sink; the store's refusals keep their meaning; every other request stays on the SDK's handler.
 */
import { DirectClient, isSinkReadable, type ByteSink } from '../../../src/net';
import type { ObjectLocation, StoredObject } from '../../../src/storage/object-store/client';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { s3ObjectClient, s3SdkClient } from '../../../src/storage/object-store/s3';
import { effectError } from '../../helpers/effect-error';
import { startFaultProxy, type FaultProxy } from '../../helpers/fault-proxy';
import { checkSignatures, startS3Server, type S3Server } from '../../helpers/s3-server';

let server: S3Server;
let proxy: FaultProxy;
const direct = new DirectClient({ rejectUnauthorized: true });
const directGets: URL[] = [];
const counted = {
  get: (request: Parameters<DirectClient['get']>[0]) => (directGets.push(request.url), direct.get(request)),
};

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
  directGets.length = 0;
});

afterAll(async () => {
  direct.close();
  await proxy?.close();
  await server?.close();
});

const client = (
  directFor: (url: URL) => DirectClient | undefined = () => counted as unknown as DirectClient,
) =>
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
      directFor,
    }),
    true,
  );

/** The listed object, as the downloader would have it. */
const listed = async (): Promise<StoredObject> => {
  const bounds = { page: () => undefined, object: () => undefined };
  for await (const object of client().list(location, new AbortController().signal, bounds)) return object;
  throw new Error('nothing listed');
};

/** A sink of 64 KiB pieces gathering what lands, which makes the reader wait now and then. */
const gathering = () => {
  const pieces: Buffer[] = [];
  let current = Buffer.alloc(64 * 1024);
  let filled = 0;
  let landings = 0;
  const sink: ByteSink = {
    space: (max) => current.subarray(filled, filled + Math.min(max, current.byteLength - filled)),
    landed: (bytes) => {
      filled += bytes;
      if (filled < current.byteLength) return undefined;
      pieces.push(current);
      current = Buffer.alloc(64 * 1024);
      filled = 0;
      return ++landings % 3 === 0 ? new Promise((resolve) => setTimeout(resolve, 2)) : undefined;
    },
  };
  return { sink, bytes: () => Buffer.concat([...pieces, current.subarray(0, filled)]) };
};

describe('DirectRangeHandler', () => {
  it('sends a ranged GetObject on the direct client, signed, and its body reads straight into a sink', async () => {
    const object = await listed();
    const start = 2 ** 20 - 5;
    const end = 2 * 2 ** 20 + 7;
    const body = await client().read(location, object, start, new AbortController().signal, end);
    expect(isSinkReadable(body)).toBe(true);
    const { sink, bytes } = gathering();
    await expect(
      (body as unknown as { readInto(s: ByteSink): Promise<boolean> }).readInto(sink),
    ).resolves.toBe(true);
    expect(bytes().equals(weights.subarray(start, end))).toBe(true);
    expect(directGets.map((url) => url.pathname)).toEqual(['/models/big/weights.bin']);
    // The proxy checked the signature (it answers 403 to a wrong one): the direct client sent the SDK's headers.
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
    expect(directGets).toEqual([]);
  });

  it('reads a changed object as `changed` through the direct client (If-Match refused)', async () => {
    const object = await listed();
    const stale = { ...object, version: '"0123456789abcdef0123456789abcdef"' };
    const error = await effectError(client().read(location, stale, 100, new AbortController().signal, 200));
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(directGets).toHaveLength(1);
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

  it('goes by the SDK handler when no direct client serves the URL (a proxy in the way)', async () => {
    const object = await listed();
    const body = await client(() => undefined).read(location, object, 100, new AbortController().signal, 200);
    expect(isSinkReadable(body)).toBe(false);
    let size = 0;
    for await (const chunk of body) size += chunk.byteLength;
    expect(size).toBe(100);
  });
});
