/** Tests of the Azure Blob provider against azurite: what a URL names, archives, paging, resume, errors, credentials. */
import { Agent } from 'node:http';
import {
  BlobSASPermissions,
  generateBlobSASQueryParameters,
  StorageSharedKeyCredential,
} from '@azure/storage-blob';
import { storageRequestTries } from '../../../src/core/retry-policy';
import { createNetwork } from '../../../src/net/network';
import { azureBlobStorage, type AzureBlobStorageOptions } from '../../../src/storage/object-store/azure-blob';
import { effectError } from '../../helpers/effect-error';
import { startFaultProxy, useAzurite } from '../../helpers/azurite';
import { listTree, readFiles } from '../../helpers/file-tree';
import { SecretScan } from '../../helpers/secrets';
import { makeTarGz } from '../../helpers/storage-server';
import { useTempDir } from '../../helpers/temp-dir';

const azurite = useAzurite();
const staging = useTempDir('azure');
const never = new AbortController().signal;
// Every error of this file, searched for the account key and SAS signatures at the end.
const produced: unknown[] = [];

const storage = (options: AzureBlobStorageOptions = {}) =>
  azureBlobStorage({
    endpoints: [azurite.current.url],
    credentials: { accountKey: azurite.current.accountKey },
    sdkRetries: 0,
    ...options,
  });

const urlOf = (container: string, prefix: string, base = azurite.current.url): string =>
  `${base}/${azurite.current.account}/${container}/${prefix}`;

const failure = async (promise: Promise<unknown>) => {
  const error = await effectError(promise);
  produced.push(error);
  return error;
};

beforeAll(async () => {
  await azurite.current.put('models', {
    'm1/config.json': '{"name":"m1"}',
    'm1/1/model.onnx': 'onnx weights',
    'm1/1/deep/vocab.txt': 'a b c',
    'm10/other.bin': 'not m1',
    'm1.txt': 'not m1 either',
    'single/weights.bin': 'one blob',
    'spaced/a b.txt': 'spaced name',
  });
  await azurite.current.put('archives', {
    'm2/model.tar.gz': await makeTarGz({ 'model.pt': 'pt weights', 'code/handler.py': 'print(1)' }),
  });
  await azurite.current.put(
    'paged',
    Object.fromEntries(
      Array.from({ length: 23 }, (_, i) => [`m/f${String(i).padStart(2, '0')}.bin`, `blob ${i}`]),
    ),
  );
}, 60_000);

afterAll(() => {
  const { accountKey } = azurite.current;
  const scan = new SecretScan([
    { label: 'account key', value: accountKey },
    { label: 'SAS signature', value: new URLSearchParams(azurite.current.sas('models')).get('sig')! },
  ]);
  scan.add('errors', produced).expectNoLeaks();
});

describe('which URLs are Azure Blob', () => {
  it.each([
    ['https://acct.blob.core.windows.net/models/m1', true],
    ['https://acct.privatelink.blob.core.windows.net/models/m1', true],
    ['https://acct.blob.core.chinacloudapi.cn/models/m1', true],
    ['https://acct.blob.core.usgovcloudapi.net/models/m1', true],
    ['http://acct.blob.core.windows.net/models/m1', false],
    ['https://example.com/models/m1.tar.gz', false],
    ['https://blob.core.windows.net.example.com/m', false],
    ['s3://models/m1', false],
  ])('%s: %s', (uri, azure) => {
    expect(azureBlobStorage().claims(uri)).toBe(azure);
  });

  it('claims URLs under a configured endpoint, at a path boundary', () => {
    const claims = azureBlobStorage({ endpoints: ['http://127.0.0.1:10000/'] }).claims;
    expect(claims('http://127.0.0.1:10000/acct/models/m1')).toBe(true);
    expect(claims('http://127.0.0.1:10001/acct/models/m1')).toBe(false);
    expect(azureBlobStorage({ endpoints: ['http://h/base'] }).claims('http://h/baseball/c/m')).toBe(false);
    const stack = azureBlobStorage({ endpoints: ['https://blob.region.example'] }).claims;
    expect(stack('https://acct.blob.region.example/models/m1')).toBe(true);
    expect(stack('https://blob.region.example.evil.test/models/m1')).toBe(false);
    expect(stack('https://acct.blob.region.example:8443/models/m1')).toBe(false);
  });
});

describe('azureBlobStorage against azurite', () => {
  it('downloads every blob under a prefix to its path relative to the prefix, never m10/ or m1.txt for m1', async () => {
    await storage().download(urlOf('models', 'm1'), staging.path, never);
    expect(await readFiles(staging.path)).toEqual({
      'config.json': '{"name":"m1"}',
      '1/model.onnx': 'onnx weights',
      '1/deep/vocab.txt': 'a b c',
    });
  });

  it('downloads a URL naming one blob as that one file', async () => {
    await storage().download(urlOf('models', 'single/weights.bin'), staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'weights.bin': 'one blob' });
  });

  it('decodes a percent-encoded blob name', async () => {
    await storage().download(urlOf('models', 'spaced/a%20b.txt'), staging.path, never);
    expect(await listTree(staging.path)).toEqual(['a b.txt']);
  });

  it('pages through the listing until the last page', async () => {
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      const paged = storage({ endpoints: [proxy.url], pageSize: 5 });
      await paged.download(urlOf('paged', 'm', proxy.url), staging.path, never);
      expect(await listTree(staging.path)).toHaveLength(23);
      expect(proxy.requests.filter((r) => r.path === `/${azurite.current.account}/paged`)).toHaveLength(5);
    } finally {
      await proxy.close();
    }
  });

  it('extracts a blob that is a .tar.gz archive into the model dir', async () => {
    await storage().download(urlOf('archives', 'm2/model.tar.gz'), staging.path, never);
    expect(await readFiles(staging.path)).toEqual({
      'model.pt': 'pt weights',
      'code/handler.py': 'print(1)',
    });
  });

  it('resumes a blob cut mid-body from the bytes already on disk, with a ranged read', async () => {
    const big = Buffer.alloc(300_000, 7);
    await azurite.current.put('models', { 'cut/weights.bin': big });
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.cut('/cut/weights.bin', 100_000);
      await storage({ endpoints: [proxy.url] }).download(
        urlOf('models', 'cut', proxy.url),
        staging.path,
        never,
      );
      const reads = proxy.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/cut/weights.bin'));
      expect(reads).toHaveLength(2);
      expect(reads[1]!.range).toMatch(/^bytes=\d+-$/);
      expect(Number(/=(\d+)-/.exec(reads[1]!.range!)![1])).toBeGreaterThan(0);
      expect((await readFiles(staging.path))['weights.bin']).toBe(big.toString());
    } finally {
      await proxy.close();
    }
  });

  it('resumes a blob whose body goes silent, once no bytes came for the timeout', async () => {
    const big = Buffer.alloc(300_000, 5);
    await azurite.current.put('models', { 'stall/weights.bin': big });
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.cut('/stall/weights.bin', 100_000, { stall: true });
      const quick = storage({ endpoints: [proxy.url], timeoutMs: 300 });
      await quick.download(urlOf('models', 'stall', proxy.url), staging.path, never);
      const reads = proxy.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/stall/weights.bin'));
      expect(reads.map((r) => r.range === undefined || r.range === 'bytes=0-')).toEqual([true, false]);
      expect((await readFiles(staging.path))['weights.bin']).toBe(big.toString());
    } finally {
      await proxy.close();
    }
  });

  it('fails retryably with changed when the blob is replaced while it is read, instead of mixing versions', async () => {
    await azurite.current.put('models', { 'moving/weights.bin': Buffer.alloc(200_000, 1) });
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.cut('/moving/weights.bin', 50_000, {
        onCut: () => azurite.current.put('models', { 'moving/weights.bin': Buffer.alloc(200_000, 2) }),
      });
      const error = await failure(
        storage({ endpoints: [proxy.url] }).download(
          urlOf('models', 'moving', proxy.url),
          staging.path,
          never,
        ),
      );
      expect(error).toMatchObject({ kind: 'changed', retryable: true });
      expect(error.message).toContain('/models/moving/weights.bin');
    } finally {
      await proxy.close();
    }
  });

  it.each([503, 429, 500])('fails retryably when the listing is answered %i', async (status) => {
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.fail(`/${azurite.current.account}/models`, status);
      const error = await failure(
        storage({ endpoints: [proxy.url] }).download(urlOf('models', 'm1', proxy.url), staging.path, never),
      );
      expect(error).toMatchObject({ kind: 'http-status', status, retryable: true });
    } finally {
      await proxy.close();
    }
  });

  it("waits out a store's push-back on a read (two 503s) and reads again: the download ends in one attempt", async () => {
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.fail(`/${azurite.current.account}/models/single/weights.bin`, 503, 2);
      await storage({ endpoints: [proxy.url], retry: { maxAttempts: 4, baseMs: 1, maxMs: 5 } }).download(
        urlOf('models', 'single', proxy.url),
        staging.path,
        never,
      );
      expect(await listTree(staging.path)).toEqual(['weights.bin']);
      const reads = proxy.requests.filter(
        (r) => r.method === 'GET' && r.path.endsWith('/single/weights.bin'),
      );
      expect(reads).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  it('retries within the SDK first: one 503 then the listing, and the download succeeds', async () => {
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.fail(`/${azurite.current.account}/models`, 503);
      await storage({ endpoints: [proxy.url], sdkRetries: 1 }).download(
        urlOf('models', 'single', proxy.url),
        staging.path,
        never,
      );
      expect(await listTree(staging.path)).toEqual(['weights.bin']);
    } finally {
      await proxy.close();
    }
  });

  it('tries a request storageRequestTries times by default: two 503s, then the listing', async () => {
    const proxy = await startFaultProxy(azurite.current.url);
    try {
      proxy.fail(`/${azurite.current.account}/models`, 503, storageRequestTries - 1);
      await azureBlobStorage({
        endpoints: [proxy.url],
        credentials: { accountKey: azurite.current.accountKey },
      }).download(urlOf('models', 'single', proxy.url), staging.path, never);
      expect(await listTree(staging.path)).toEqual(['weights.bin']);
    } finally {
      await proxy.close();
    }
  });

  it('fails permanently with not-found naming a container that does not exist', async () => {
    const error = await failure(storage().download(urlOf('no-such-container', 'm1'), staging.path, never));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('/no-such-container/m1');
    expect(error.message).toContain('ContainerNotFound');
  });

  it('fails permanently with not-found when no blob has the prefix, naming container and prefix', async () => {
    const error = await failure(storage().download(urlOf('models', 'nothing-here'), staging.path, never));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toMatch(/nothing-here.*models|models.*nothing-here/);
  });

  it('fails permanently with HTTP 403 for a wrong account key, naming the container and never the key', async () => {
    const wrong = storage({ credentials: { accountKey: Buffer.alloc(64, 9).toString('base64') } });
    const error = await failure(wrong.download(urlOf('models', 'm1'), staging.path, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).toMatch(/access denied.*AuthorizationFailure/);
    expect(error.message).toContain('/models/m1');
  });

  it('reads with the SAS in the URL alone, and never shows it', async () => {
    const sas = azurite.current.sas('models');
    const anonymous = storage({ credentials: {} });
    await anonymous.download(`${urlOf('models', 'single')}?${sas}`, staging.path, never);
    expect(await listTree(staging.path)).toEqual(['weights.bin']);
  });

  /** A SAS signed for one blob of `models` (sr=b), reading it for an hour. */
  const blobSas = (blobName: string): string =>
    generateBlobSASQueryParameters(
      {
        containerName: 'models',
        blobName,
        permissions: BlobSASPermissions.parse('r'),
        startsOn: new Date(Date.now() - 60_000),
        expiresOn: new Date(Date.now() + 3_600_000),
      },
      new StorageSharedKeyCredential(azurite.current.account, azurite.current.accountKey),
    ).toString();

  it('reads one blob with a SAS signed for that blob alone (sr=b), which may not list its container', async () => {
    // A blob SAS, as Azure's portal and `az storage blob generate-sas` hand out for one model file: it may read
    // that blob and nothing else. KServe's agent fetches such a URL with one GET; a listing is refused (403).
    const sas = blobSas('single/weights.bin');
    const anonymous = storage({ credentials: {} });
    await anonymous.download(`${urlOf('models', 'single/weights.bin')}?${sas}`, staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'weights.bin': 'one blob' });
  });

  it('reads one blob of a container whose public access is "blob" (anyone may read, no one list), with no credential', async () => {
    await azurite.current.put('public-blobs', { 'm/weights.bin': 'public blob' });
    await azurite.current.container('public-blobs').setAccessPolicy('blob');
    const anonymous = storage({ credentials: {} });
    await anonymous.download(urlOf('public-blobs', 'm/weights.bin'), staging.path, never);
    expect(await readFiles(staging.path)).toEqual({ 'weights.bin': 'public blob' });
    // A folder of it is no blob: the listing's refusal stands.
    const error = await failure(anonymous.download(urlOf('public-blobs', 'm'), staging.path, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).toMatch(/^listing .*\/public-blobs\/m \(no credentials\): access denied/);
  });

  it('fails permanently, reading no listing, for a blob SAS whose blob is not there', async () => {
    const sas = blobSas('single/gone.bin');
    const error = await failure(
      storage({ credentials: {} }).download(
        `${urlOf('models', 'single/gone.bin')}?${sas}`,
        staging.path,
        never,
      ),
    );
    expect(error).toMatchObject({ retryable: false });
    expect(error.message).toMatch(/^reading .*\/models\/single\/gone\.bin \(the SAS in the URL\)/);
    expect(error.message).not.toContain(new URLSearchParams(sas).get('sig')!);
  });

  it.each([
    ['expired', () => azurite.current.sas('models', { expiresOn: new Date(Date.now() - 60_000) })],
    ['wrong', () => azurite.current.sas('models').replace(/sig=[^&]+/, 'sig=bm90IHRoZSBzaWduYXR1cmU%3D')],
  ])('fails permanently with HTTP 403 for an %s SAS, showing no signature', async (_label, makeSas) => {
    const sas = makeSas();
    const error = await failure(
      storage({ credentials: {} }).download(`${urlOf('models', 'm1')}?${sas}`, staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(error.message).not.toContain(new URLSearchParams(sas).get('sig')!);
    expect(error.message).not.toContain('sig=');
  });

  it("reads with AZURE_STORAGE_SAS_TOKEN when the URL has no SAS and is AZURE_STORAGE_ACCOUNT's", async () => {
    const sasToken = `?${azurite.current.sas('models')}`.replace(/^\?/, '');
    const { account } = azurite.current;
    await storage({ credentials: { account, sasToken } }).download(
      urlOf('models', 'single'),
      staging.path,
      never,
    );
    expect(await listTree(staging.path)).toEqual(['weights.bin']);
  });

  it("reads with a connection string's key when its AccountName is the URL's account", async () => {
    const { account, accountKey, url } = azurite.current;
    const connectionString = `DefaultEndpointsProtocol=http;AccountName=${account};AccountKey=${accountKey};BlobEndpoint=${url}/${account};`;
    await storage({ credentials: { connectionString } }).download(
      urlOf('models', 'single'),
      staging.path,
      never,
    );
    expect(await listTree(staging.path)).toEqual(['weights.bin']);
  });

  it('fails permanently with HTTP 403 reading a private container with no credentials', async () => {
    const error = await failure(
      storage({ credentials: {} }).download(urlOf('models', 'm1'), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'http-status', retryable: false });
  });

  it('sends its requests through the agent agentFor gives for the service URL', async () => {
    const agent = new Agent({ keepAlive: true });
    const asked: string[] = [];
    let connections = 0;
    const create = agent.createConnection.bind(agent);
    agent.createConnection = (...args: Parameters<typeof create>) => {
      connections += 1;
      return create(...args);
    };
    const viaAgent = storage({
      agentFor: (url) => {
        asked.push(url.href);
        return agent;
      },
    });
    try {
      await viaAgent.download(urlOf('models', 'single'), staging.path, never);
      expect(asked).toEqual([`${azurite.current.url}/${azurite.current.account}`]);
      expect(connections).toBeGreaterThan(0);
    } finally {
      agent.destroy();
    }
  });

  it.each([
    ['sends its requests through HTTP_PROXY', '', 1],
    ['goes direct when NO_PROXY names the host', '127.0.0.1', 0],
  ])('%s (the Network)', async (_label, noProxy, throughProxy) => {
    const proxy = await startFaultProxy(azurite.current.url);
    const network = createNetwork({ proxy: { httpProxy: proxy.url, noProxy } });
    try {
      const viaNetwork = storage({ agentFor: (url) => network.agentFor(url) });
      await viaNetwork.download(urlOf('models', 'single'), staging.path, never);
      expect(await listTree(staging.path)).toEqual(['weights.bin']);
      expect(proxy.requests.length > 0 ? 1 : 0).toBe(throughProxy);
    } finally {
      await network.close();
      await proxy.close();
    }
  });

  it('stops with aborted when the signal aborts', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await failure(storage().download(urlOf('models', 'm1'), staging.path, controller.signal));
    expect(error).toMatchObject({ kind: 'aborted' });
  });

  it('fails permanently with invalid-uri for a URL naming no container', async () => {
    const error = await failure(
      storage().download(`${azurite.current.url}/${azurite.current.account}`, staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
  });
});
