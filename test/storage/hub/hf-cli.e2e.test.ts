/**
 * `hf://` on the real process as KServe's storage initializer is run (`modelsync hf://owner/model[:revision]
 * /mnt/models`), the Hub at `HF_ENDPOINT` (the stand-in and its CDN), the token in `HF_TOKEN` or its file.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startHubStandIn, type HubStandIn } from '../../../src/testing/hub-stand-in';
import { killAllCli, runCli } from '../../helpers/cli-process';
import { readFiles } from '../../helpers/file-tree';
import { atLeast } from '../../helpers/log-sink';
import { SecretScan } from '../../helpers/secrets';
import { useTempDir } from '../../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('hf-cli');
const token = `hf_${randomBytes(12).toString('hex')}`;
const weights = randomBytes(200_000);
/** What KServe's webhook sets in every storage initializer (pkg/utils/storage.go, AddDefaultHuggingFaceEnvVars). */
const kserveHfEnv = {
  HF_HUB_ENABLE_HF_TRANSFER: '1',
  HF_XET_HIGH_PERFORMANCE: '1',
  HF_XET_NUM_CONCURRENT_RANGE_GETS: '8',
};

let hub: HubStandIn;
let v1: string;
beforeAll(async () => {
  hub = await startHubStandIn();
  hub.createRepo('org/private-model', { private: true });
  v1 = hub.commit('org/private-model', { 'config.json': '{"v":1}', 'model.safetensors': weights });
  hub.tag('org/private-model', 'v1', v1);
  hub.commit('org/private-model', { 'config.json': '{"v":2}', 'model.safetensors': 'newer' });
  hub.addToken(token, ['org/private-model']);
});
afterAll(() => hub.close());

const errorLines = (text: string): Array<Record<string, unknown>> =>
  text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter(atLeast('error'));

describe('modelsync hf://<owner>/<model>:<revision> <dest> (the storage initializer)', () => {
  it('downloads the revision a tag names into dest with HF_ENDPOINT and HF_TOKEN, then exits 0', async () => {
    const dest = join(tmp.path, 'mnt', 'models');
    const before = hub.requests.length;

    const result = await runCli(['hf://org/private-model:v1', dest], {
      env: { HF_ENDPOINT: hub.url, HF_TOKEN: token },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(0);
    expect(await readFiles(dest)).toMatchObject({ 'config.json': '{"v":1}' });
    expect((await readFile(join(dest, 'model.safetensors'))).equals(weights)).toBe(true);
    expect(errorLines(result.stderr.text)).toEqual([]);
    const seen = hub.requests.slice(before);
    expect(seen[0]).toMatchObject({ server: 'hub', path: '/api/models/org/private-model/revision/v1' });
    expect(
      seen.filter((r) => r.path.includes('/resolve/')).every((r) => r.path.includes(`/resolve/${v1}/`)),
    ).toBe(true);
    expect(seen.filter((r) => r.server === 'cdn').every((r) => r.authorization === undefined)).toBe(true);
    new SecretScan([{ label: 'HF_TOKEN', value: token }])
      .add('stderr', result.stderr.text)
      .add('stdout', result.stdout.text)
      .expectNoLeaks();
  });

  it('reads the token from HF_TOKEN_PATH, a Secret mounted as kubelet mounts it (links into ..data), as huggingface_hub does', async () => {
    const secret = join(tmp.path, 'secret');
    await mkdir(join(secret, '..2026_12_06'), { recursive: true });
    await writeFile(join(secret, '..2026_12_06', 'token'), `${token}\n`);
    await symlink('..2026_12_06', join(secret, '..data'));
    await symlink('..data/token', join(secret, 'token'));
    const dest = join(tmp.path, 'mnt', 'models');
    const before = hub.requests.length;

    const result = await runCli(['hf://org/private-model:v1', dest], {
      env: { HF_ENDPOINT: hub.url, HF_TOKEN_PATH: join(secret, 'token') },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(0);
    expect(await readFiles(dest)).toMatchObject({ 'config.json': '{"v":1}' });
    const atHub = hub.requests.slice(before).filter((r) => r.server === 'hub');
    expect(atHub.length).toBeGreaterThan(0);
    expect(atHub.every((r) => r.authorization === `Bearer ${token}`)).toBe(true);
    new SecretScan([{ label: 'the token file', value: token }])
      .add('stderr', result.stderr.text)
      .add('stdout', result.stdout.text)
      .expectNoLeaks();
  });

  it('exits 1 after one error line saying to set HF_TOKEN when the repo cannot be seen without one', async () => {
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['hf://org/private-model', dest], {
      env: { HF_ENDPOINT: hub.url },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(1);
    expect(errorLines(result.stderr.text)).toEqual([
      expect.objectContaining({
        errorKind: 'http-status',
        msg: expect.stringMatching(
          `^cannot download hf://org/private-model to ${dest}: http-status: .*set HF_TOKEN`,
        ) as unknown,
      }),
    ]);
  });

  it("exits 1 with KServe's message for a URI that is no hf://owner/model", async () => {
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['hf://just-a-name', dest], {
      env: { HF_ENDPOINT: hub.url },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(1);
    expect(result.stderr.text).toContain("Expected 'hf://owner/model[:revision]'");
  });

  it('exits 1 with no model in dest when a file listed at 10 bytes is served as 10 MiB in chunks', async () => {
    hub.commit('org/liar', { 'config.json': '{"n":1234}' });
    hub.injectFault('resolve', { serve: Buffer.alloc(10 * 2 ** 20, 'x'), framing: 'chunked' }, Infinity);
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['hf://org/liar', dest], {
      env: { HF_ENDPOINT: hub.url, MODELSYNC_MAX_ATTEMPTS: '2', MODELSYNC_RETRY_BASE_MS: '10' },
      timeoutMs: 30_000,
    }).finally(() => hub.injectFault('resolve', { status: 500 }, 0));

    expect(result.code).toBe(1);
    expect(await readFiles(dest).catch(() => ({}))).toEqual({});
    // Told apart by their fields, not by the level's spelling (a number today, a label once item 10 lands).
    const failures = result.stderr.text
      .split('\n')
      .filter((line) => line.includes('"errorKind"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(failures.at(-1)).toMatchObject({
      errorKind: 'invalid-response',
      msg: expect.stringContaining('it goes on past the 10 bytes listed') as unknown,
    });
  });

  it('stops at start (exit 2) on an HF_ENDPOINT that is no http(s) URL, naming the variable', async () => {
    const result = await runCli(['hf://org/private-model', join(tmp.path, 'mnt', 'models')], {
      env: { HF_ENDPOINT: 'ftp://mirror' },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(2);
    expect(result.stderr.text).toContain('HF_ENDPOINT is not an http(s) URL');
  });

  it("downloads with the HF_* variables KServe's webhook sets in every storage initializer, then exits 0", async () => {
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['hf://org/private-model:v1', dest], {
      env: { HF_ENDPOINT: hub.url, HF_TOKEN: token, ...kserveHfEnv },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(0);
    expect((await readFile(join(dest, 'model.safetensors'))).equals(weights)).toBe(true);
  });

  it('fetches a big file over one connection, no ranged parts, with HF_XET_NUM_CONCURRENT_RANGE_GETS=1', async () => {
    const big = randomBytes(34 * 2 ** 20); // past the size from which files come in ranged parts (32 MiB)
    hub.commit('org/big', { 'model.safetensors': big });
    const dest = join(tmp.path, 'mnt', 'models');
    const before = hub.requests.length;

    const result = await runCli(['hf://org/big', dest], {
      env: { HF_ENDPOINT: hub.url, ...kserveHfEnv, HF_XET_NUM_CONCURRENT_RANGE_GETS: '1' },
      timeoutMs: 30_000,
    });

    expect(result.code).toBe(0);
    expect((await readFile(join(dest, 'model.safetensors'))).equals(big)).toBe(true);
    const cdn = hub.requests.slice(before).filter((request) => request.server === 'cdn');
    expect(cdn.map((request) => request.range)).toEqual([undefined]);
  });

  it('stops at start (exit 2) on an HF_XET_NUM_CONCURRENT_RANGE_GETS that is no whole number, naming it', async () => {
    const result = await runCli(['hf://org/private-model', join(tmp.path, 'mnt', 'models')], {
      env: { HF_ENDPOINT: hub.url, HF_XET_NUM_CONCURRENT_RANGE_GETS: 'eight' },
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(2);
    expect(result.stderr.text).toContain(
      'HF_XET_NUM_CONCURRENT_RANGE_GETS: expected a whole number from 0 to 4096, got \\"eight\\"',
    );
  });
});
