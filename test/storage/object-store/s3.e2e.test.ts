/** Tests of the S3 provider against a real S3-protocol server (s3rver, started once for the file), with a fault proxy in front. */
import { Agent } from 'node:http';
import type { LookupFunction } from 'node:net';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { EffectError } from '../../../src/core/errors';
import { createNetwork } from '../../../src/net/network';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { s3Storage, type S3StorageOptions } from '../../../src/storage/object-store/s3';
import { effectError } from '../../helpers/effect-error';
import { startFaultProxy, type FaultProxy } from '../../helpers/fault-proxy';
import { listTree, readFiles } from '../../helpers/file-tree';
import {
  checkSignatures,
  freshS3Keys,
  slowDown,
  startS3Server,
  type S3Server,
} from '../../helpers/s3-server';
import { SecretScan } from '../../helpers/secrets';
import { makeTarGz } from '../../helpers/storage-server';
import { tempDir, removeTempDir, useTempDir } from '../../helpers/temp-dir';

let server: S3Server;
let proxy: FaultProxy;
const staging = useTempDir('s3');
const errors: EffectError[] = [];

const big = Buffer.alloc(1_000_000, 'weights-');
const manyKeys = Object.fromEntries(
  Array.from({ length: 1005 }, (_, i) => [`many/part-${String(i).padStart(4, '0')}.bin`, `${i}`]),
);

beforeAll(async () => {
  server = await startS3Server();
  proxy = await startFaultProxy(server.url);
  await server.createBucket('models');
  await server.put('models', {
    'm1/config.pbtxt': 'name: "m1"',
    'm1/1/model.onnx': 'onnx bytes',
    'm1/1/': '',
    'm10/other.bin': 'not m1',
    'single/model.pt': 'torch',
    'archive/model.tar.gz': await makeTarGz({ 'saved_model.pb': 'pb', 'variables/v.index': 'idx' }),
    'big/weights.bin': big,
    ...manyKeys,
  });
}, 120_000);

afterEach(() => proxy.reset());

afterAll(async () => {
  await proxy?.close();
  await server?.close();
  // Nothing any test failed with quotes a key: the registry hid them, the messages never held them.
  const scan = new SecretScan([
    { label: 'secret access key', value: server.keys.secretAccessKey },
    { label: 'access key id', value: server.keys.accessKeyId },
  ]);
  scan.add('errors', errors).expectNoLeaks();
});

/** A provider for `endpoint` (the proxy by default), signed with the server's keys unless `options` say otherwise. */
const storage = (options: Partial<S3StorageOptions> = {}) =>
  s3Storage({
    endpoint: proxy.url,
    region: 'us-east-1',
    addressing: 'auto',
    credentials: s3Credentials(
      { anonymous: false },
      {
        AWS_ACCESS_KEY_ID: server.keys.accessKeyId,
        AWS_SECRET_ACCESS_KEY: server.keys.secretAccessKey,
      },
    ),
    ...options,
  });

const download = (uri: string, options: Partial<S3StorageOptions> = {}) =>
  storage(options).download(uri, staging.path, new AbortController().signal);

/** The EffectError a download fails with, kept for the leak scan. */
const failure = async (uri: string, options: Partial<S3StorageOptions> = {}): Promise<EffectError> => {
  const error = await effectError(download(uri, options));
  errors.push(error);
  return error;
};

const gets = (key: string) =>
  proxy.requests.filter((r) => r.method === 'GET' && (r.url ?? '').startsWith(`/models/${key}`));

describe('s3Storage against s3rver', () => {
  it('downloads a prefix as a directory: nested objects at their paths, folder markers skipped, m10 left alone', async () => {
    await download('s3://models/m1');
    expect(await readFiles(staging.path)).toEqual({
      'config.pbtxt': 'name: "m1"',
      '1/model.onnx': 'onnx bytes',
    });
  });

  it('downloads the one object a URI names, as its base name', async () => {
    await download('s3://models/single/model.pt');
    expect(await readFiles(staging.path)).toEqual({ 'model.pt': 'torch' });
  });

  it('pages through more than 1,000 objects (KServe stopped at the first page)', async () => {
    await download('s3://models/many/', { concurrency: 16 });
    expect(await listTree(staging.path)).toHaveLength(1005);
    const listings = proxy.requests.filter((r) => r.url.includes('list-type=2'));
    expect(listings.length).toBe(2);
    expect(listings[1]!.url).toContain('continuation-token=');
  }, 60_000);

  it('extracts an archive object', async () => {
    await download('s3://models/archive');
    expect(await readFiles(staging.path)).toEqual({ 'saved_model.pb': 'pb', 'variables/v.index': 'idx' });
  });

  it('fails for good on a missing bucket, naming it', async () => {
    const error = await failure('s3://no-such-bucket/m1');
    expect(error).toMatchObject({ kind: 'not-found', retryable: false, status: 404 });
    expect(error.message).toContain(
      `listing bucket no-such-bucket under "m1/" at ${proxy.url}: NoSuchBucket`,
    );
  });

  it('fails for good on a missing key, naming bucket and key', async () => {
    const error = await failure('s3://models/single/missing.pt');
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toBe(
      's3://models/single/missing.pt: no objects named "single/missing.pt" or under "single/missing.pt/" in bucket models',
    );
  });

  it('fails for good on an unknown access key and on a wrong secret, quoting neither', async () => {
    proxy.inject(checkSignatures(server.keys));
    const unknown = freshS3Keys();
    const badId = await failure('s3://models/m1', {
      credentials: s3Credentials(
        { anonymous: false },
        {
          AWS_ACCESS_KEY_ID: unknown.accessKeyId,
          AWS_SECRET_ACCESS_KEY: server.keys.secretAccessKey,
        },
      ),
    });
    expect(badId).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(badId.message).toContain('InvalidAccessKeyId');
    const badSecret = await failure('s3://models/m1', {
      credentials: s3Credentials(
        { anonymous: false },
        {
          AWS_ACCESS_KEY_ID: server.keys.accessKeyId,
          AWS_SECRET_ACCESS_KEY: unknown.secretAccessKey,
        },
      ),
    });
    expect(badSecret).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(badSecret.message).toContain('SignatureDoesNotMatch');
    const scan = new SecretScan([
      { label: 'unknown key id', value: unknown.accessKeyId },
      { label: 'wrong secret', value: unknown.secretAccessKey },
    ]);
    scan.add('errors', [badId, badSecret]).expectNoLeaks();
    // With the right keys the same proxy lets the download through: the check is real.
    await download('s3://models/single/model.pt');
  });

  it('resumes a body cut mid-object with a ranged read checked against the ETag', async () => {
    proxy.inject({
      when: (r) => r.method === 'GET' && (r.url ?? '').startsWith('/models/big/weights.bin'),
      cutAfter: 300_000,
    });
    await download('s3://models/big/weights.bin');
    const reads = gets('big/weights.bin');
    expect(reads.map((r) => r.outcome)).toEqual(['cut', 'forwarded']);
    expect(reads[0]!.headers.range).toBeUndefined();
    expect(reads[1]!.headers.range).toMatch(/^bytes=\d+-$/);
    expect(Number(/\d+/.exec(String(reads[1]!.headers.range))![0])).toBeGreaterThan(0);
    expect(reads[1]!.headers['if-match']).toBe(reads[0]!.headers['if-match']);
    expect((await readFiles(staging.path))['weights.bin']).toBe(big.toString());
  });

  it('fails `changed`, retryably, when the object is replaced between the cut and the resume', async () => {
    await server.put('models', { 'moving/weights.bin': big });
    proxy.inject({
      when: (r) => r.method === 'GET' && (r.url ?? '').startsWith('/models/moving/weights.bin'),
      cutAfter: 100_000,
      onCut: () => server.put('models', { 'moving/weights.bin': Buffer.alloc(1_000_000, 'changed-') }),
    });
    const error = await failure('s3://models/moving/weights.bin');
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(error.message).toContain(`reading moving/weights.bin from bucket models at ${proxy.url}`);
  });

  it('rides out throttling within the SDK retries, and reports it retryable past them', async () => {
    const listing = (r: { readonly url?: string | undefined }): boolean =>
      (r.url ?? '').includes('list-type=2');
    proxy.inject(slowDown(listing, 2));
    await download('s3://models/single/model.pt');
    proxy.inject(slowDown(listing, 5));
    const error = await failure('s3://models/single/model.pt', { maxAttempts: 2 });
    expect(error).toMatchObject({ kind: 'http-status', status: 503, retryable: true });
    expect(error.message).toContain('SlowDown');
  });

  it('addresses buckets path-style at a custom endpoint (auto and path)', async () => {
    await download('s3://models/single/model.pt', { addressing: 'path' });
    expect(proxy.requests.every((r) => r.url.startsWith('/models/') || r.url.startsWith('/models?'))).toBe(
      true,
    );
    expect(proxy.requests.every((r) => r.headers.host === `127.0.0.1:${proxy.port}`)).toBe(true);
  });

  it('addresses buckets virtual-host style when asked (bucket in the host name)', async () => {
    // *.s3.localhost resolves nowhere here: the agent sends it to the proxy, which passes the Host on to s3rver.
    const lookup: LookupFunction = (_host, options, done) => {
      if (options.all === true) done(null, [{ address: '127.0.0.1', family: 4 }]);
      else done(null, '127.0.0.1', 4);
    };
    const agent = new Agent({ lookup });
    try {
      await download('s3://models/single/model.pt', {
        endpoint: `http://s3.localhost:${proxy.port}`,
        addressing: 'virtual',
        agent: () => agent,
      });
    } finally {
      agent.destroy();
    }
    expect(await readFiles(staging.path)).toEqual({ 'model.pt': 'torch' });
    expect(proxy.requests.length).toBeGreaterThan(0);
    expect(proxy.requests.every((r) => r.headers.host === `models.s3.localhost:${proxy.port}`)).toBe(true);
    expect(proxy.requests.some((r) => r.url.startsWith('/models'))).toBe(false);
  });

  it('goes through HTTP_PROXY (the shared Network agent), and past it for a host in NO_PROXY', async () => {
    const viaProxy = createNetwork({ proxy: { httpProxy: proxy.url } });
    const bypass = createNetwork({ proxy: { httpProxy: proxy.url, noProxy: '127.0.0.1' } });
    try {
      const endpoint = new URL(server.url);
      await download('s3://models/single/model.pt', {
        endpoint: server.url,
        agent: () => viaProxy.agentFor(endpoint),
      });
      // Every request reached the proxy in absolute form, as a forward proxy takes them.
      expect(proxy.requests.length).toBeGreaterThan(1);
      expect(proxy.requests.every((r) => r.absolute)).toBe(true);
      expect(proxy.requests.map((r) => r.url)).toContain('/models/single/model.pt?x-id=GetObject');
      proxy.reset();
      await download('s3://models/m1', { endpoint: server.url, agent: () => bypass.agentFor(endpoint) });
      expect(proxy.requests).toEqual([]);
      expect(await listTree(staging.path)).toContain('config.pbtxt');
    } finally {
      await Promise.all([viaProxy.close(), bypass.close()]);
    }
  });

  it('sends unsigned requests with anonymous credentials', async () => {
    await download('s3://models/single/model.pt', { credentials: s3Credentials({ anonymous: true }, {}) });
    expect(proxy.requests.length).toBeGreaterThan(0);
    expect(proxy.requests.map((r) => r.headers.authorization)).toEqual(proxy.requests.map(() => undefined));
  });

  it('re-reads a mounted credentials file when it changes', async () => {
    proxy.inject(checkSignatures(server.keys));
    const dir = await tempDir('aws');
    try {
      const file = path.join(dir, 'credentials');
      const wrong = freshS3Keys();
      const write = (keys: { accessKeyId: string; secretAccessKey: string }) =>
        writeFile(
          file,
          `[default]\naws_access_key_id = ${keys.accessKeyId}\naws_secret_access_key = ${keys.secretAccessKey}\n`,
        );
      await write(wrong);
      const credentials = s3Credentials(
        { anonymous: false, recheckMs: 0 },
        { HOME: dir, AWS_SHARED_CREDENTIALS_FILE: file, AWS_CONFIG_FILE: path.join(dir, 'config') },
      );
      const error = await failure('s3://models/single/model.pt', { credentials });
      expect(error.message).toContain('InvalidAccessKeyId');
      await write(server.keys);
      await download('s3://models/single/model.pt', { credentials });
      expect(await readFiles(staging.path)).toEqual({ 'model.pt': 'torch' });
      new SecretScan([{ label: 'file secret', value: wrong.secretAccessKey }])
        .add('error', error)
        .expectNoLeaks();
    } finally {
      await removeTempDir(dir);
    }
  });

  it('refuses an s3 URI with credentials in it, quoting nothing of them', async () => {
    const error = await failure('s3://AKIAEXAMPLEKEY123456:topsecretvalue@models/m1');
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).toBe(
      's3://models/m1: an s3:// URI carries no credentials; the AWS credential chain supplies them',
    );
  });
});
