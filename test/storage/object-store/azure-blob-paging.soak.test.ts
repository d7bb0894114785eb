/** Azure pages a listing at 5,000 blobs: a prefix of 5,001 blobs in azurite downloads whole, at the default page size. */
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import { startFaultProxy, useAzurite } from '../../helpers/azurite';
import { listTree } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';

const azurite = useAzurite();
const staging = useTempDir('azure-paging');
const blobCount = 5_001;

it('downloads all 5,001 blobs of a prefix, listed in two pages', async () => {
  const container = azurite.current.container('many');
  await container.create();
  const names = Array.from({ length: blobCount }, (_, i) => `m/${String(i).padStart(5, '0')}.bin`);
  for (let i = 0; i < names.length; i += 100) {
    await Promise.all(
      names.slice(i, i + 100).map((name) => container.getBlockBlobClient(name).upload(name, name.length)),
    );
  }
  const proxy = await startFaultProxy(azurite.current.url);
  try {
    const storage = azureBlobStorage({
      endpoints: [proxy.url],
      credentials: { accountKey: azurite.current.accountKey },
      concurrency: 32,
    });
    await storage.download(
      `${proxy.url}/${azurite.current.account}/many/m`,
      staging.path,
      new AbortController().signal,
    );
    expect(await listTree(staging.path)).toHaveLength(blobCount);
    const pages = proxy.requests.filter((r) => r.path === `/${azurite.current.account}/many`);
    expect(pages).toHaveLength(2);
  } finally {
    await proxy.close();
  }
});
