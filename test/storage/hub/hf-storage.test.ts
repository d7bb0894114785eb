/** hfStorage against the Hub stand-in: one commit, the tree, patterns before bytes, the token at the Hub alone, reuse, progress. */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { redact } from '../../../src/core/redact';
import type { DownloadProgress } from '../../../src/ports';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { hfStorage, type HfStorageOptions } from '../../../src/storage/hub/hf-storage';
import { startHubStandIn, type HubStandIn } from '../../../src/testing/hub-stand-in';
import { effectError } from '../../helpers/effect-error';
import { listTree, readFiles } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';
import { makeFifo } from '../../hardening/neighbour/sentinel';

const staging = useTempDir('hf');
const never = new AbortController().signal;
const weights = randomBytes(70_000);

let hub: HubStandIn;
let sha: string;
beforeAll(async () => {
  hub = await startHubStandIn({ pageSize: 2 });
  sha = hub.commit('org/m1', {
    'config.json': '{"model_type":"bert"}',
    'model.safetensors': weights,
    'tokenizer/vocab.txt': 'a b c',
    'README.md': '# m1',
    '.gitattributes': '*.safetensors filter=lfs',
  });
});
afterAll(() => hub.close());

const storage = (options: Partial<HfStorageOptions> = {}) => ({
  provider: hfStorage({ endpoint: hub.url, ...options }),
});

/** The requests the stand-in saw from `before` on. */
const since = (before: number) => hub.requests.slice(before);

/** The file requests (`/resolve/`) the stand-in saw from `before` on. */
const resolvesSince = (before: number) => since(before).filter((r) => r.path.includes('/resolve/'));

describe('hfStorage against the Hub stand-in', () => {
  it('resolves the revision first, lists its commit, and fetches every file from /resolve/<commit>/', async () => {
    const before = hub.requests.length;
    await storage().provider.download('hf://org/m1', staging.path, never);

    expect(await readFiles(staging.path)).toMatchObject({
      'config.json': '{"model_type":"bert"}',
      'tokenizer/vocab.txt': 'a b c',
      'README.md': '# m1',
      '.gitattributes': '*.safetensors filter=lfs',
    });
    expect((await listTree(staging.path)).sort()).toContain('model.safetensors');
    const hubPaths = since(before)
      .filter((r) => r.server === 'hub')
      .map((r) => r.path);
    expect(hubPaths[0]).toBe('/api/models/org/m1/revision/main');
    // Five files and a directory at two entries a page: three pages, all at the commit.
    expect(hubPaths.slice(1, 4)).toEqual(Array(3).fill(`/api/models/org/m1/tree/${sha}`));
    expect(hubPaths.slice(4).every((p) => p.startsWith(`/org/m1/resolve/${sha}/`))).toBe(true);
    expect(hubPaths.slice(4)).toHaveLength(5);
  });

  it('saves the LFS file the CDN serves byte for byte', async () => {
    await storage().provider.download('hf://org/m1', staging.path, never);
    expect((await readFile(`${staging.path}/model.safetensors`)).equals(weights)).toBe(true);
  });

  it('takes every file from the commit the revision named even when the branch moves mid-download', async () => {
    const first = hub.commit('org/moving', { 'a.txt': 'v1 a', 'b.txt': 'v1 b' });
    const before = hub.requests.length;
    const provider = hfStorage({ endpoint: hub.url, concurrency: 1 });
    // The reuse offer comes after the listing and before the first file: the branch moves there.
    await provider.download('hf://org/moving', staging.path, never, undefined, {
      reuse: () => {
        hub.commit('org/moving', { 'a.txt': 'v2 a', 'b.txt': 'v2 b', 'c.txt': 'v2 c' });
        return Promise.resolve(false);
      },
    });
    expect(await readFiles(staging.path)).toEqual({ 'a.txt': 'v1 a', 'b.txt': 'v1 b' });
    const resolves = resolvesSince(before);
    expect(resolves.length).toBeGreaterThan(0);
    expect(resolves.every((r) => r.path.includes(`/resolve/${first}/`))).toBe(true);
  });

  it.each([
    ['a tag', 'v1'],
    ['a full commit sha', ''],
  ])('resolves %s', async (_, name) => {
    const tagged = hub.commit('org/tagged', { 'w.txt': 'tagged' });
    hub.tag('org/tagged', 'v1', tagged);
    hub.commit('org/tagged', { 'w.txt': 'newer' });
    await storage().provider.download(`hf://org/tagged:${name || tagged}`, staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'w.txt': 'tagged' });
  });

  it('selects files by the patterns before any file is requested', async () => {
    const before = hub.requests.length;
    const { provider } = storage();
    await provider.download('hf://org/m1', staging.path, never, undefined, {
      select: { allowPatterns: ['*.json', 'tokenizer/'], ignorePatterns: ['tokenizer/*.bin'] },
    });
    expect(await readFiles(staging.path)).toEqual({
      'config.json': '{"model_type":"bert"}',
      'tokenizer/vocab.txt': 'a b c',
    });
    const resolves = since(before).filter((r) => r.path.includes('/resolve/'));
    expect(resolves.map((r) => r.path.split('/').slice(5).join('/')).sort()).toEqual([
      'config.json',
      'tokenizer/vocab.txt',
    ]);
    expect(since(before).some((r) => r.server === 'cdn')).toBe(false);
    expect(resolves).toHaveLength(2);
  });

  it('sends the token to the Hub on every request and never to the CDN', async () => {
    hub.commit('org/private', { 'model.bin': weights, 'config.json': '{}' });
    hub.createRepo('org/private', { private: true });
    hub.addToken('hf_privateReader1', ['org/private']);
    const before = hub.requests.length;
    const { provider } = storage({ token: 'hf_privateReader1' });
    await provider.download('hf://org/private', staging.path, never);

    expect(await listTree(staging.path)).toEqual(['config.json', 'model.bin']);
    const seen = since(before);
    expect(
      seen.filter((r) => r.server === 'hub').every((r) => r.authorization === 'Bearer hf_privateReader1'),
    ).toBe(true);
    const cdn = seen.filter((r) => r.server === 'cdn');
    expect(cdn).toHaveLength(1);
    expect(cdn[0]!.authorization).toBeUndefined();
    // Every file was asked of the Hub itself (its /resolve/ URL), the CDN reached only by its redirect.
    expect(resolvesSince(before).every((r) => r.server === 'hub')).toBe(true);
  });

  describe('the token file (no HF_TOKEN: hfTokenFileOf)', () => {
    const files = useTempDir('hf-token');
    const tokenFile = () => join(files.path, 'token');
    const authorizationsSince = (before: number) =>
      since(before)
        .filter((r) => r.server === 'hub')
        .map((r) => r.authorization);

    beforeAll(() => {
      hub.createRepo('org/by-file', { private: true });
      hub.commit('org/by-file', { 'model.bin': 'weights' });
      hub.addToken('hf_fromFileFirst1', ['org/by-file']);
      hub.addToken('hf_fromFileRotated2', ['org/by-file']);
    });

    it('is read at each download, as a mounted Secret is rotated: each download sends the token the file holds then', async () => {
      await writeFile(tokenFile(), ' hf_fromFileFirst1\r\n');
      const { provider } = storage({ tokenFile: tokenFile() });
      let before = hub.requests.length;
      await provider.download('hf://org/by-file', staging.path, never);
      expect(new Set(authorizationsSince(before))).toEqual(new Set(['Bearer hf_fromFileFirst1']));
      expect(redact('hf_fromFileFirst1')).not.toContain('hf_fromFileFirst1');

      await writeFile(tokenFile(), 'hf_fromFileRotated2\n');
      before = hub.requests.length;
      await provider.download('hf://org/by-file', join(staging.path, 'again'), never);
      expect(new Set(authorizationsSince(before))).toEqual(new Set(['Bearer hf_fromFileRotated2']));
    });

    it('sends none when the file is missing or blank (a private repo then answers 401), and HF_TOKEN wins over it', async () => {
      const before = hub.requests.length;
      const missing = await effectError(
        storage({ tokenFile: tokenFile() }).provider.download('hf://org/by-file', staging.path, never),
      );
      expect(missing).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
      await writeFile(tokenFile(), ' \n');
      await expect(
        storage({ tokenFile: tokenFile() }).provider.download('hf://org/by-file', staging.path, never),
      ).rejects.toMatchObject({ status: 401 });
      expect(authorizationsSince(before).every((a) => a === undefined)).toBe(true);

      await writeFile(tokenFile(), 'hf_notThisOne\n');
      const both = storage({ token: 'hf_fromFileFirst1', tokenFile: tokenFile() });
      await expect(both.provider.download('hf://org/by-file', staging.path, never)).resolves.toBeUndefined();
    });

    it.each([
      ['a dir', async (path: string) => mkdir(path), /is a directory, not a regular file/],
      ['a FIFO', async (path: string) => makeFifo(path), /is a FIFO \(named pipe\), not a regular file/],
      [
        'a token with a space inside',
        async (path: string) => writeFile(path, 'hf_two words'),
        /token file .* holds whitespace \(U\+0020\) at character 7 of the token; it is not sent/,
      ],
    ])(
      'fails the download for good, naming the file and no request made, when it is %s',
      async (_, make, reason) => {
        await make(tokenFile());
        const before = hub.requests.length;
        const error = await effectError(
          storage({ tokenFile: tokenFile() }).provider.download('hf://org/by-file', staging.path, never),
        );
        expect(error).toMatchObject({ kind: 'refused', retryable: false });
        expect(error.message).toContain(`the Hugging Face token file ${tokenFile()}`);
        expect(error.message).toMatch(reason);
        expect(error.message).not.toContain('two words');
        expect(since(before)).toEqual([]);
      },
    );
  });

  it('follows a renamed repo to its new name, the token still sent there', async () => {
    hub.commit('org/old-name', { 'w.txt': 'moved' });
    hub.rename('org/old-name', 'org/new-name');
    hub.addToken('hf_anyReader2');
    const before = hub.requests.length;
    await storage({ token: 'hf_anyReader2' }).provider.download('hf://org/old-name', staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'w.txt': 'moved' });
    const moved = since(before).filter((r) => r.path.startsWith('/api/models/org/new-name'));
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.every((r) => r.authorization === 'Bearer hf_anyReader2')).toBe(true);
  });

  it('saves a repo that is one archive file as it is, never extracting it (as snapshot_download)', async () => {
    hub.commit('org/one-archive', { 'model.tar.gz': 'not extracted' });
    await storage().provider.download('hf://org/one-archive', staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'model.tar.gz': 'not extracted' });
  });

  it('offers the identity once the commit and the files are known, and fetches nothing when it is reused', async () => {
    const before = hub.requests.length;
    const offered: string[] = [];
    const { provider } = storage();
    await provider.download('hf://org/m1', staging.path, never, undefined, {
      select: { allowPatterns: ['*.json'] },
      reuse: (identity) => {
        offered.push(identity);
        return Promise.resolve(true);
      },
    });
    expect(offered).toEqual([`hf:${hub.url}/org/m1@${sha} allow=["*.json"] ignore=[]`]);
    expect(resolvesSince(before)).toEqual([]);
    expect(since(before).some((r) => r.server === 'cdn')).toBe(false);
    expect(await listTree(staging.path)).toEqual([]);
  });

  it('downloads when the reuse offer is declined, naming the whole repo without a selection', async () => {
    const offered: string[] = [];
    await storage().provider.download('hf://org/m1', staging.path, never, undefined, {
      reuse: (identity) => {
        offered.push(identity);
        return Promise.resolve(false);
      },
    });
    expect(offered).toEqual([`hf:${hub.url}/org/m1@${sha}`]);
    expect(await listTree(staging.path)).toContain('config.json');
  });

  it('reports progress against the sum of the listed sizes, and once at the end', async () => {
    const reports: DownloadProgress[] = [];
    await storage().provider.download('hf://org/m1', staging.path, never, (p) => reports.push(p));
    const total = weights.length + '{"model_type":"bert"}'.length + 'a b c'.length + '# m1'.length + 24;
    expect(reports.at(-1)).toMatchObject({ done: true, bytes: total, totalBytes: total });
  });

  it('fails for good before any file is fetched when the listed sizes pass --max-model-bytes', async () => {
    const before = hub.requests.length;
    const limits = { ...cliDownloadLimits, maxModelBytes: 1000 };
    const error = await effectError(
      storage({ limits }).provider.download('hf://org/m1', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toContain('--max-model-bytes');
    expect(since(before).some((r) => r.path.includes('/resolve/'))).toBe(false);
  });

  it('fails for good when the tree lists more files than --max-model-files', async () => {
    const limits = { ...cliDownloadLimits, maxModelFiles: 3 };
    const error = await effectError(
      storage({ limits }).provider.download('hf://org/m1', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toContain('--max-model-files');
  });

  it('fails for good when no file matches the selection', async () => {
    const error = await effectError(
      storage().provider.download('hf://org/m1', staging.path, never, undefined, {
        select: { allowPatterns: ['*.gguf'] },
      }),
    );
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('the patterns allow=["*.gguf"] ignore=[] select none of its');
  });

  it('makes no request with HF_HUB_OFFLINE set', async () => {
    const before = hub.requests.length;
    const error = await effectError(
      storage({ offline: true }).provider.download('hf://org/m1', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('HF_HUB_OFFLINE');
    expect(since(before)).toEqual([]);
  });

  it('stops at once when aborted, as a retryable abort', async () => {
    const controller = new AbortController();
    const { provider } = storage();
    const error = await effectError(
      provider.download('hf://org/m1', staging.path, controller.signal, undefined, {
        // After the listing, before the files: the abort comes while the download is under way.
        reuse: () => {
          controller.abort();
          return Promise.resolve(false);
        },
      }),
    );
    expect(error).toMatchObject({ kind: 'aborted', retryable: true });
  });
});
