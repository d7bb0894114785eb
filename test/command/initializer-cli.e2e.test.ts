/**
 * The storage initializer on the real process, run as KServe runs its `storage-initializer` container: args
 * `[<storageUri>, /mnt/models]` (or pairs), credentials in KServe's env names; exit codes and the error line.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '../../src/testing/wait';
import { killAllCli, runCli, startCli } from '../helpers/cli-process';
import { listTree, readFiles } from '../helpers/file-tree';
import { useHttpServers } from '../helpers/http-servers';
import { atLeast } from '../helpers/log-sink';
import { startS3Server, type S3Server } from '../helpers/s3-server';
import { SecretScan } from '../helpers/secrets';
import { startStorageServer, type StorageServer } from '../helpers/storage-server';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('initializer-cli');
const serve = useHttpServers();
let s3: S3Server;
let storage: StorageServer;
beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket('models');
}, 60_000);
afterAll(() => s3.close());
beforeEach(async () => {
  storage = await startStorageServer();
});
afterEach(() => storage.close());

/** What KServe's CredentialBuilder puts in the init container's env for an S3 secret (MinIO at `endpoint`). */
const kserveS3Env = (endpoint: string): Readonly<Record<string, string>> => ({
  AWS_ACCESS_KEY_ID: s3.keys.accessKeyId,
  AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey,
  AWS_ENDPOINT_URL: endpoint,
  S3_ENDPOINT: endpoint.replace(/^https?:\/\//, ''),
  S3_USE_HTTPS: '0',
  S3_VERIFY_SSL: '0',
  AWS_DEFAULT_REGION: 'us-east-1',
  S3_USER_VIRTUAL_BUCKET: 'false',
});

const errorLines = (text: string): unknown[] =>
  text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter(atLeast('error'));

describe('modelsync <uri> <dest> (the storage initializer)', () => {
  it('downloads an http model into /mnt/models as KServe passes it, then exits 0', async () => {
    const dest = join(tmp.path, 'mnt', 'models');
    await storage.tarGz('/models/iris.tar.gz', { 'model.joblib': 'joblib', 'meta/info.json': '{}' });

    const result = await runCli([`${storage.url}/models/iris.tar.gz`, dest], { timeoutMs: 20_000 });

    expect(result.code).toBe(0);
    expect(await listTree(dest)).toEqual(['meta/', 'meta/info.json', 'model.joblib']);
    expect(result.stdout.text).toBe('');
    // stderr carries only JSON log lines, as for the agent.
    expect(errorLines(result.stderr.text)).toEqual([]);
  });

  it("downloads with an InferenceService's storage spec (STORAGE_CONFIG from the storage-config Secret)", async () => {
    await s3.put('models', { 'spec/model.onnx': 'onnx' });
    const dest = join(tmp.path, 'mnt', 'models');
    // What CreateStorageSpecSecretEnvs writes: the Secret's key as STORAGE_CONFIG, the parameters as the override.
    const result = await runCli(['s3://models/spec', dest], {
      env: {
        STORAGE_CONFIG: JSON.stringify({
          type: 's3',
          access_key_id: s3.keys.accessKeyId,
          secret_access_key: s3.keys.secretAccessKey,
          endpoint_url: s3.url,
          region: 'us-east-1',
          bucket: 'models',
        }),
        STORAGE_OVERRIDE_CONFIG: JSON.stringify({ type: 's3', bucket: 'models' }),
        S3_USER_VIRTUAL_BUCKET: 'false',
      },
      timeoutMs: 20_000,
    });
    expect(result.code).toBe(0);
    expect(await readFiles(dest)).toEqual({ 'model.onnx': 'onnx' });
    expect(result.stderr.text).not.toContain(s3.keys.secretAccessKey);
  });

  it("downloads an s3 prefix with KServe's S3 credential env, and several pairs in order", async () => {
    await s3.put('models', { 'resnet/config.pbtxt': 'cfg', 'resnet/1/model.onnx': 'onnx' });
    storage.file('/vocab.txt', 'words', 'text/plain');
    const [first, second] = [
      join(tmp.path, 'mnt', 'models', 'resnet'),
      join(tmp.path, 'mnt', 'models', 'vocab'),
    ];

    const result = await runCli(['s3://models/resnet', first, `${storage.url}/vocab.txt`, second], {
      env: kserveS3Env(s3.url),
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(0);
    expect(await readFiles(first)).toEqual({ 'config.pbtxt': 'cfg', '1/model.onnx': 'onnx' });
    expect(await readFiles(second)).toEqual({ 'vocab.txt': 'words' });
    new SecretScan([{ label: 'AWS secret', value: s3.keys.secretAccessKey }])
      .add('stderr', result.stderr.text)
      .add('stdout', result.stdout.text)
      .expectNoLeaks();
  });

  it('exits 1 after one error line naming the URI and the reason when the object is missing', async () => {
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['s3://models/no-such-model', dest], {
      env: kserveS3Env(s3.url),
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(1);
    expect(errorLines(result.stderr.text)).toEqual([
      expect.objectContaining({
        errorKind: 'not-found',
        msg: expect.stringMatching(
          `^cannot download s3://models/no-such-model to ${dest}: not-found: `,
        ) as unknown,
      }),
    ]);
    expect(await listTree(dest)).toEqual([]);
  });

  it('exits 1 with the reason on an http 404, showing no query', async () => {
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli([`${storage.url}/gone.bin?sig=SeCrEtSiGnAtUrE`, dest], { timeoutMs: 20_000 });

    expect(result.code).toBe(1);
    expect(errorLines(result.stderr.text)).toEqual([
      expect.objectContaining({
        msg: expect.stringMatching(
          `^cannot download ${storage.url}/gone.bin to ${dest}: http-status: .*404`,
        ) as unknown,
      }),
    ]);
    expect(result.stderr.text).not.toContain('SeCrEtSiGnAtUrE');
  });

  it('exits 2 on an odd number of arguments', async () => {
    const result = await runCli([`${storage.url}/model.bin`], { timeoutMs: 20_000 });

    expect(result.code).toBe(2);
  });

  // SIGHUP too: its default action killed the process, leaving the staging dir and its partial files in dest.
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    'stops on %s mid-download with exit 1, leaving dest as it was and no staging dir',
    async (signal) => {
      const dest = join(tmp.path, 'mnt', 'models');
      // Headers and 64 KiB of a 64 MiB body, then nothing.
      const server = await serve((_request, response) => {
        response.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': 64 * 2 ** 20,
        });
        response.write(Buffer.alloc(64 * 1024, 1));
      });
      const cli = startCli([`${server.url}/model.bin`, dest]);
      await waitFor(
        async () =>
          (await readdir(dest).catch(() => [])).some((name) => name.startsWith('.modelsync-download-')),
        10_000,
        () => `the staging dir\n${cli.transcript()}`,
      );

      const exit = await cli.signalAndWait(signal);

      expect(exit).toEqual({ code: 1, signal: null });
      expect(await readdir(dest)).toEqual([]);
      // The last line `kubectl logs` shows said only `storage initializer starting`: nothing told why it exited 1.
      expect(cli.logs.at(-1)).toMatchObject({
        level: 'error',
        signal,
        storageUri: `${server.url}/model.bin`,
        dest,
        msg: `storage initializer stopped by ${signal} while downloading ${server.url}/model.bin to ${dest}; exiting as failed`,
      });
    },
  );
});
