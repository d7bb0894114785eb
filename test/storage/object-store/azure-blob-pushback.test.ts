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
});
