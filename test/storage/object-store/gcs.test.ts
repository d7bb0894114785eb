/** Tests of the gs:// provider against the GCS JSON API stand-in: what a URI names, archives, paging, resume, credentials. */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { storageRequestTries } from '../../../src/core/retry-policy';
import { defaultDownloadLimits } from '../../../src/storage/download-limits';
import { createNetwork } from '../../../src/net/network';
import { gcsStorage, type GcsStorageOptions } from '../../../src/storage/object-store/gcs';
import type { DownloadProgress } from '../../../src/ports';
import { startGcsStandIn, type GcsStandIn } from '../../../src/testing/gcs-stand-in';
import { startFaultProxy } from '../../helpers/azurite';
import { effectError } from '../../helpers/effect-error';
import { listTree, readFiles } from '../../helpers/file-tree';
import { makeZip } from '../../helpers/storage-server';
import { SecretScan } from '../../helpers/secrets';
import { removeTempDir, tempDir, useTempDir } from '../../helpers/temp-dir';

const staging = useTempDir('gcs');
const never = new AbortController().signal;

let gcs: GcsStandIn;
beforeAll(async () => {
  gcs = await startGcsStandIn({ maxPageSize: 5 });
  gcs.put('models', 'm1/config.json', '{"name":"m1"}');
  gcs.put('models', 'm1/1/model.onnx', 'onnx weights');
  gcs.put('models', 'm1/1/deep/vocab.txt', 'a b c');
  gcs.put('models', 'm1/', '');
  gcs.put('models', 'm10/other.bin', 'not m1');
  gcs.put('models', 'm1.txt', 'not m1 either');
  gcs.put('models', 'single/weights.bin', 'one object');
  gcs.put(
    'archives',
    'm2/model.zip',
    await makeZip({ 'model.pt': 'pt weights', 'code/handler.py': 'print(1)' }),
  );
  for (let i = 0; i < 23; i++) gcs.put('paged', `m/f${String(i).padStart(2, '0')}.bin`, `object ${i}`);
});
afterAll(() => gcs.close());

const storage = (options: GcsStorageOptions = {}) => gcsStorage({ endpoint: gcs.url, ...options });

describe('gcsStorage against the GCS stand-in', () => {
  it('downloads every object under a prefix to its path relative to the prefix, never m10/ or m1.txt for m1', async () => {
    await storage().download('gs://models/m1', staging.path, never);
    expect(await readFiles(staging.path)).toEqual({
      'config.json': '{"name":"m1"}',
      '1/model.onnx': 'onnx weights',
      '1/deep/vocab.txt': 'a b c',
    });
  });

  it('downloads a URI naming one object as that one file', async () => {
    await storage().download('gs://models/single/weights.bin', staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'weights.bin': 'one object' });
  });

  it('pages through the listing with pageToken until the last page', async () => {
    const before = gcs.requests.length;
    await storage().download('gs://paged/m', staging.path, never);
    expect(await listTree(staging.path)).toHaveLength(23);
    const pages = gcs.requests.slice(before).filter((r) => r.path === '/storage/v1/b/paged/o');
    expect(pages.map((r) => r.query.pageToken === undefined)).toEqual([true, false, false, false, false]);
  });

  it('extracts an object that is a .zip archive into the model dir', async () => {
    await storage().download('gs://archives/m2/model.zip', staging.path, never);
    expect(await readFiles(staging.path)).toEqual({
      'model.pt': 'pt weights',
      'code/handler.py': 'print(1)',
    });
  });

  it('resumes an object whose body stopped mid-way from the bytes already on disk, with a ranged read', async () => {
    const big = Buffer.alloc(300_000, 7);
    gcs.put('models', 'cut/weights.bin', big);
    gcs.injectFault('media', { cutAfterBytes: 100_000 });
    const before = gcs.requests.length;
    await storage({ timeoutMs: 300 }).download('gs://models/cut', staging.path, never);
    const reads = gcs.requests.slice(before).filter((r) => r.query.alt === 'media');
    expect(reads.map((r) => r.range)).toEqual([undefined, expect.stringMatching(/^bytes=[1-9]\d*-$/)]);
    expect((await readFiles(staging.path))['weights.bin']).toBe(big.toString());
  });

  it('reports progress while a download runs (bytes of all objects, total = the listed sizes), each byte once', async () => {
    gcs.put('models', 'progress/a.bin', Buffer.alloc(200_000, 1));
    gcs.put('models', 'progress/b/c.bin', Buffer.alloc(150_000, 2));
    // One body (whichever is read first: both are past 100 kB) stalls after 100 kB until the request timeout
    // notices it: reports come meanwhile, then it resumes.
    gcs.injectFault('media', { stallAfterBytes: 100_000 });
    const reports: DownloadProgress[] = [];
    const limits = { ...defaultDownloadLimits, progressIntervalMs: 20 };
    await storage({ timeoutMs: 300, limits }).download('gs://models/progress', staging.path, never, (p) =>
      reports.push(p),
    );
    const running = reports.filter((report) => !report.done);
    expect(running.length).toBeGreaterThan(0);
    expect(running.every((report) => report.totalBytes === 350_000)).toBe(true);
    expect(Math.max(...running.map((report) => report.bytes))).toBeGreaterThanOrEqual(100_000);
    expect(reports.filter((report) => report.done)).toEqual([
      expect.objectContaining({ bytes: 350_000, totalBytes: 350_000 }),
    ]);
  });

  it('fails permanently with not-found naming a bucket that does not exist', async () => {
    const error = await effectError(storage().download('gs://no-such-bucket/m1', staging.path, never));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('gs://no-such-bucket/m1');
  });

  it('fails permanently with not-found when no object has the prefix, naming bucket and prefix', async () => {
    const error = await effectError(storage().download('gs://models/nothing-here', staging.path, never));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('gs://models/nothing-here');
  });

  it('fails permanently with invalid-uri for a bucket name GCS cannot have', async () => {
    const error = await effectError(storage().download('gs://No_Such/m1', staging.path, never));
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
  });

  it.each([
    ['sends its requests through HTTP_PROXY', '', true],
    ['goes direct when NO_PROXY names the host', '127.0.0.1', false],
  ])('%s (the Network)', async (_label, noProxy, proxied) => {
    const proxy = await startFaultProxy(gcs.url);
    const network = createNetwork({ proxy: { httpProxy: proxy.url, noProxy } });
    try {
      await storage({ network }).download('gs://models/single', staging.path, never);
      expect(await listTree(staging.path)).toEqual(['weights.bin']);
      const seen = proxy.requests.map((r) => r.path);
      expect(seen).toEqual(
        proxied ? ['/storage/v1/b/models/o', '/storage/v1/b/models/o/single%2Fweights.bin'] : [],
      );
    } finally {
      await network.close();
      await proxy.close();
    }
  });

  it("waits out a store's push-back on a read (two 503s) and reads again: the download ends in one attempt", async () => {
    gcs.injectFault('media', { status: 503 }, 2);
    const before = gcs.requests.length;
    await storage({ retry: { maxAttempts: 4, baseMs: 1, maxMs: 5 } }).download(
      'gs://models/single/weights.bin',
      staging.path,
      never,
    );
    expect(await readFiles(staging.path)).toEqual({ 'weights.bin': 'one object' });
    expect(gcs.requests.slice(before).filter((r) => r.path.endsWith('/o/single/weights.bin'))).toHaveLength(
      3,
    );
  });

  it('fails retryably on a 503 listing', async () => {
    gcs.injectFault('list', { status: 503 }, storageRequestTries);
    const error = await effectError(storage().download('gs://models/m1', staging.path, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 503, retryable: true });
  });
});

describe('gcsStorage credentials', () => {
  let secured: GcsStandIn;
  let dir: string;
  beforeAll(async () => {
    secured = await startGcsStandIn({ requireAuth: true });
    secured.put('private', 'm1/weights.bin', 'private weights');
    dir = await tempDir('gcs-credentials');
  });
  afterAll(async () => {
    await secured.close();
    await removeTempDir(dir);
  });

  /** A workload identity federation credentials file: the subject token read from `tokenFile`, exchanged at the stand-in. */
  const writeExternalAccount = async (file: string, tokenFile: string): Promise<void> => {
    const config = {
      type: 'external_account',
      audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/k8s',
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: `${secured.url}/v1/token`,
      credential_source: { file: tokenFile },
    };
    const scratch = `${file}.new`;
    await writeFile(scratch, JSON.stringify(config));
    await rename(scratch, file);
  };

  it('fails permanently with HTTP 401 when no credentials are given and the bucket is not public', async () => {
    const error = await effectError(
      gcsStorage({ endpoint: secured.url }).download('gs://private/m1', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
    expect(error.message).toContain('gs://private/m1');
  });

  it('reads with GOOGLE_APPLICATION_CREDENTIALS, and reads that file again when it is replaced', async () => {
    const before = secured.requests.length;
    const credentialsFile = path.join(dir, 'credentials.json');
    const [first, second] = ['subject-token-one-0123456789', 'subject-token-two-9876543210'];
    await writeFile(path.join(dir, 'token-1'), first);
    await writeFile(path.join(dir, 'token-2'), second);
    secured.acceptSubjectToken(first);
    await writeExternalAccount(credentialsFile, path.join(dir, 'token-1'));
    const authorized = gcsStorage({ endpoint: secured.url, credentialsFile });
    await authorized.download('gs://private/m1', staging.path, never);
    expect(await listTree(staging.path)).toEqual(['weights.bin']);

    // The key is rotated: the old one stops working, the file names the new one.
    secured.revokeTokens();
    secured.acceptSubjectToken(second);
    await writeExternalAccount(credentialsFile, path.join(dir, 'token-2'));
    const again = path.join(staging.path, 'again');
    await mkdir(again);
    await authorized.download('gs://private/m1', again, never);
    expect(await listTree(again)).toEqual(['weights.bin']);
    const reads = secured.requests.slice(before).filter((r) => r.path.startsWith('/storage/'));
    expect(reads.map((r) => r.authorized)).toEqual([true, true, true, true]);
  });

  it('fails permanently when the token exchange refuses the credentials, showing no token', async () => {
    const credentialsFile = path.join(dir, 'refused.json');
    const tokenFile = path.join(dir, 'token-refused');
    const subjectToken = 'subject-token-refused-0123456789';
    await writeFile(tokenFile, subjectToken);
    await writeExternalAccount(credentialsFile, tokenFile);
    const error = await effectError(
      gcsStorage({ endpoint: secured.url, credentialsFile }).download('gs://private/m1', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 400, retryable: false });
    new SecretScan([{ label: 'subject token', value: subjectToken }]).add('error', error).expectNoLeaks();
  });
});
