/**
 * The storage initializer in process against real peers (node:http, s3rver, the GCS stand-in, azurite, local
 * files): every scheme the router serves laid out as KServe lays it, pairs in order, retries, the one error line.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startGcsStandIn, type GcsStandIn } from '../../src/testing/gcs-stand-in';
import { useAzurite } from '../helpers/azurite';
import { exists, listTree, readFiles, writeFiles } from '../helpers/file-tree';
import { useHttpServers } from '../helpers/http-servers';
import { initializerConfig, runInitializer } from '../helpers/initializer';
import { atLevel } from '../helpers/log-sink';
import { startS3Server, type S3Server } from '../helpers/s3-server';
import { SecretScan, secretValues } from '../helpers/secrets';
import { startStorageServer, type StorageServer } from '../helpers/storage-server';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('initializer');
const azurite = useAzurite();
const serve = useHttpServers();
let s3: S3Server;
let gcs: GcsStandIn;
let storage: StorageServer;
beforeAll(async () => {
  [s3, gcs] = await Promise.all([startS3Server(), startGcsStandIn()]);
  await s3.createBucket('models');
}, 60_000);
afterAll(() => Promise.all([s3.close(), gcs.close()]));
beforeEach(async () => {
  storage = await startStorageServer();
});
afterEach(() => storage.close());

describe('initializerMode', () => {
  it('downloads every pair in order, each scheme laid out in its dest as KServe lays it', async () => {
    storage.file('/iris/model.joblib', 'joblib bytes', 'application/octet-stream');
    await storage.tarGz('/bert.tar.gz', { 'config.json': '{}', '1/model.pt': 'pt' });
    await s3.put('models', {
      'resnet/config.pbtxt': 'cfg',
      'resnet/1/model.onnx': 'onnx',
      'resnet10/x': 'no',
    });
    gcs.put('models', 'xgb/model.bst', 'bst');
    await azurite.current.put('models', { 'azm/model.onnx': 'azure onnx', 'azm/sub/vocab.txt': 'v' });
    await writeFiles(join(tmp.path, 'pvc'), { 'local/1/model.savedmodel': 'tf', 'single/model.pkl': 'pkl' });
    const { account, accountKey, url: azureUrl } = azurite.current;
    const out = (name: string): string => join(tmp.path, 'mnt', name);
    const pairs = [
      { uri: `${storage.url}/iris/model.joblib`, dest: out('iris') },
      { uri: `${storage.url}/bert.tar.gz`, dest: out('bert') },
      { uri: 's3://models/resnet', dest: out('resnet') },
      { uri: 'gs://models/xgb', dest: out('xgb') },
      { uri: `${azureUrl}/${account}/models/azm`, dest: out('azm') },
      { uri: join(tmp.path, 'pvc', 'local'), dest: out('local') },
      { uri: `file://${join(tmp.path, 'pvc', 'single', 'model.pkl')}`, dest: out('single') },
    ];
    const config = initializerConfig({
      s3Endpoint: s3.url,
      gcsEndpoint: gcs.url,
      azureBlobEndpoint: azureUrl,
      localStorageRoots: [join(tmp.path, 'pvc')],
    });
    const env = {
      AWS_ACCESS_KEY_ID: s3.keys.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey,
      AZURE_STORAGE_ACCESS_KEY: accountKey,
    };

    const run = await runInitializer(pairs, config, env);

    expect(run.errors).toEqual([]);
    expect(run.exitCode).toBe(0);
    expect(await readFiles(out('iris'))).toEqual({ 'model.joblib': 'joblib bytes' });
    expect(await listTree(out('bert'))).toEqual(['1/', '1/model.pt', 'config.json']); // extracted, not kept
    expect(await readFiles(out('resnet'))).toEqual({ 'config.pbtxt': 'cfg', '1/model.onnx': 'onnx' });
    expect(await readFiles(out('xgb'))).toEqual({ 'model.bst': 'bst' });
    expect(await readFiles(out('azm'))).toEqual({ 'model.onnx': 'azure onnx', 'sub/vocab.txt': 'v' });
    expect(await readFiles(out('local'))).toEqual({ '1/model.savedmodel': 'tf' });
    expect(await readFiles(out('single'))).toEqual({ 'model.pkl': 'pkl' });
    const done = run.logs.filter((line) => line.msg === 'model downloaded');
    expect(done.map((line) => line.dest)).toEqual(pairs.map((pair) => pair.dest));
    expect(done[0]).toMatchObject({
      storageUri: pairs[0]!.uri,
      bytes: 12,
      seconds: expect.any(Number) as unknown,
    });
    expect(done[5]).toMatchObject({ bytes: 2 }); // a local copy reports no progress: the bytes of its files
    expect(run.logText).not.toContain(accountKey);
    expect(run.logText).not.toContain(s3.keys.secretAccessKey);
  });

  it('exits 1 after one error line naming the URI without its query and the reason, on a 404', async () => {
    const secrets = secretValues();
    const dest = join(tmp.path, 'models');
    await writeFiles(dest, { 'keep.txt': 'kept' });
    const uri = `${storage.url}/missing.bin?sig=${secrets.token}`;

    const run = await runInitializer([{ uri, dest }]);

    expect(run.exitCode).toBe(1);
    expect(run.errors).toEqual([
      expect.objectContaining({
        storageUri: `${storage.url}/missing.bin`,
        dest,
        errorKind: 'http-status',
        msg: expect.stringMatching(
          `^cannot download ${storage.url}/missing.bin to ${dest}: http-status: .*404`,
        ) as unknown,
      }),
    ]);
    expect(await listTree(dest)).toEqual(['keep.txt']);
    new SecretScan([{ label: 'query token', value: secrets.token }]).add('logs', run.logs).expectNoLeaks();
  });

  it("sends a URI's user:password as Basic authorization, as KServe's initializer does, in lines that show neither", async () => {
    const secrets = secretValues();
    const dest = join(tmp.path, 'models');
    const expected = `Basic ${Buffer.from(`user:${secrets.password}`).toString('base64')}`;
    const { url } = await serve((request, response) => {
      if (request.headers.authorization !== expected) return void response.writeHead(401).end();
      response.writeHead(200, { 'Content-Length': 7 }).end('weights');
    });
    const uri = `${url.replace('//', `//user:${secrets.password}@`)}/model.bin`;

    const run = await runInitializer([{ uri, dest }]);

    expect(run.exitCode).toBe(0);
    expect(await readFile(join(dest, 'model.bin'), 'utf8')).toBe('weights');
    new SecretScan([
      { label: 'password', value: secrets.password },
      { label: 'Basic', value: expected.slice('Basic '.length) },
    ])
      .add('logs', run.logs)
      .expectNoLeaks();
  });

  it('shows the URI without its query in its progress and done lines', async () => {
    const secrets = secretValues();
    const body = Buffer.alloc(256 * 1024, 7);
    // 16 KiB every 10 ms: long enough for progress lines at a 20 ms interval.
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      let sent = 0;
      const timer = setInterval(() => {
        response.write(body.subarray(sent, (sent += 16 * 1024)));
        if (sent >= body.length) {
          clearInterval(timer);
          response.end();
        }
      }, 10);
      response.on('close', () => clearInterval(timer));
    });
    const dest = join(tmp.path, 'models');
    const uri = `${server.url}/model.bin?X-Amz-Signature=${secrets.amzSignature}`;

    const run = await runInitializer([{ uri, dest }], initializerConfig({ progressIntervalMs: 20 }));

    expect(run.exitCode).toBe(0);
    const progress = run.logs.filter((line) => line.msg === 'download progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toMatchObject({
      storageUri: `${server.url}/model.bin`,
      dest,
      totalBytes: body.length,
    });
    expect(run.logs.filter((line) => line.msg === 'model downloaded')).toEqual([
      expect.objectContaining({ storageUri: `${server.url}/model.bin`, bytes: body.length }),
    ]);
    new SecretScan([{ label: 'signature', value: secrets.amzSignature }])
      .add('logs', run.logs)
      .expectNoLeaks();
  });

  it('retries a transient failure with the backoff, then downloads', async () => {
    storage.file('/model.bin', 'bytes', 'application/octet-stream');
    storage.fail('/model.bin', 503, 2);
    const dest = join(tmp.path, 'models');

    const run = await runInitializer([{ uri: `${storage.url}/model.bin`, dest }]);

    expect(run.exitCode).toBe(0);
    const retries = run.logs.filter((line) => line.msg === 'download failed; retrying');
    expect(retries).toEqual([
      expect.objectContaining({ errorKind: 'http-status', attempt: 1 }),
      expect.objectContaining({ errorKind: 'http-status', attempt: 2 }),
    ]);
    expect(retries.every(atLevel('warn'))).toBe(true);
    expect(await readFiles(dest)).toEqual({ 'model.bin': 'bytes' });
  });

  it('gives up after --max-attempts attempts of a transient failure', async () => {
    storage.fail('/model.bin', 503);
    const dest = join(tmp.path, 'models');

    const run = await runInitializer(
      [{ uri: `${storage.url}/model.bin`, dest }],
      initializerConfig({ maxAttempts: 3 }),
    );

    expect(run.exitCode).toBe(1);
    expect(storage.requestsFor('/model.bin')).toBe(3);
    expect(run.errors).toHaveLength(1);
    expect(await listTree(dest)).toEqual([]);
  });

  it('stops at the first pair that fails', async () => {
    storage.file('/b.bin', 'b', 'application/octet-stream');
    const pairs = [
      { uri: `${storage.url}/a.bin`, dest: join(tmp.path, 'a') },
      { uri: `${storage.url}/b.bin`, dest: join(tmp.path, 'b') },
    ];

    const run = await runInitializer(pairs);

    expect(run.exitCode).toBe(1);
    expect(run.errors).toHaveLength(1);
    expect(storage.requestsFor('/b.bin')).toBe(0);
    expect(await exists(join(tmp.path, 'b'))).toBe(false);
  });

  it('fails a scheme no provider serves before anything is written or fetched', async () => {
    storage.file('/a.bin', 'a', 'application/octet-stream');
    const pairs = [
      { uri: `${storage.url}/a.bin`, dest: join(tmp.path, 'a') },
      { uri: 'hdfs://namenode/models/m1', dest: join(tmp.path, 'b') },
    ];

    const run = await runInitializer(pairs);

    expect(run.exitCode).toBe(1);
    expect(run.errors).toEqual([
      expect.objectContaining({
        errorKind: 'unsupported-scheme',
        msg: expect.stringMatching(
          `^cannot download hdfs://namenode/models/m1 to ${join(tmp.path, 'b')}: unsupported-scheme: `,
        ) as unknown,
      }),
    ]);
    expect(storage.requestsFor('/a.bin')).toBe(0);
    expect(await listTree(tmp.path)).toEqual([]);
  });

  it('refuses a local path outside --local-storage-roots', async () => {
    await writeFiles(join(tmp.path, 'elsewhere'), { 'model.bin': 'x' });
    const dest = join(tmp.path, 'models');
    const config = initializerConfig({ localStorageRoots: [join(tmp.path, 'pvc')] });

    const run = await runInitializer([{ uri: join(tmp.path, 'elsewhere'), dest }], config);

    expect(run.exitCode).toBe(1);
    expect(run.errors).toEqual([expect.objectContaining({ errorKind: 'refused' })]);
    expect(await listTree(dest)).toEqual([]);
  });

  it('exits 2 on malformed download headers, naming the variable, never its value', async () => {
    const run = await runInitializer(
      [{ uri: `${storage.url}/a.bin`, dest: join(tmp.path, 'a') }],
      initializerConfig(),
      { '127.0.0.1-headers': 'Bearer not-json-s3cr3t' },
    );

    expect(run.outputs).toEqual([{ _tag: 'Exit', code: 2 }]);
    expect(run.errors).toEqual([
      expect.objectContaining({
        msg: 'cannot start: the settings are invalid',
        reason: expect.stringContaining('127.0.0.1-headers') as unknown,
      }),
    ]);
    expect(run.logText).not.toContain('s3cr3t');
    expect(await exists(join(tmp.path, 'a'))).toBe(false);
  });
});
