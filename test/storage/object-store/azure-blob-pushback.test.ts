/** azureBlobStorage against a store that pushes back (503 ServerBusy with a Retry-After): the wait it asks for is kept. */
import { azureBlobStorage } from '../../../src/storage/object-store/azure-blob';
import { effectError } from '../../helpers/effect-error';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';

const never = new AbortController().signal;

describe('azureBlobStorage against a store that pushes back', () => {
  const serve = useHttpServers();
  const staging = useTempDir('azure-pushback');

  it("carries the push-back's Retry-After, for the store's pause and the loader's retry", async () => {
    const busy = await serve((_request, response) => {
      response.writeHead(503, {
        'content-type': 'application/xml',
        'x-ms-error-code': 'ServerBusy',
        'retry-after': '7',
      });
      response.end(
        '<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code>' +
          '<Message>The server is busy.</Message></Error>',
      );
    });
    const storage = azureBlobStorage({ endpoints: [busy.url], sdkRetries: 0 });
    const error = await effectError(storage.download(`${busy.url}/acct/models/m1`, staging.path, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 503, retryable: true, retryAfterMs: 7000 });
  });

  it("pauses only the account that pushed back, not another's container of the same name", async () => {
    const busy = await serve((_request, response) => {
      response.writeHead(503, { 'content-type': 'application/xml', 'x-ms-error-code': 'ServerBusy' });
      response.end(
        '<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Busy.</Message></Error>',
      );
    });
    const calm = await serve((request, response) => {
      if (new URL(request.url ?? '/', 'http://store').searchParams.get('comp') !== 'list') {
        response
          .writeHead(200, { 'content-length': '1', etag: '"1"', 'x-ms-blob-type': 'BlockBlob' })
          .end('x');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/xml' });
      response.end(
        '<?xml version="1.0" encoding="utf-8"?><EnumerationResults ContainerName="models"><Blobs><Blob>' +
          '<Name>m1/a</Name><Properties><Content-Length>1</Content-Length><Etag>"1"</Etag>' +
          '<BlobType>BlockBlob</BlobType></Properties></Blob></Blobs><NextMarker /></EnumerationResults>',
      );
    });
    // A pause of a minute, should the calm account's download wait for the busy one's.
    const retry = { maxAttempts: 8, baseMs: 60_000, maxMs: 60_000 };
    const storage = azureBlobStorage({ endpoints: [busy.url, calm.url], sdkRetries: 0, retry });
    const error = await effectError(storage.download(`${busy.url}/acct/models/m1`, staging.path, never));
    expect(error).toMatchObject({ kind: 'http-status', status: 503 });
    // Given up after 10 s, where the other account's pause would hold it a minute.
    await storage.download(`${calm.url}/acct/models/m1`, `${staging.path}/calm`, AbortSignal.timeout(10_000));
  });
});
