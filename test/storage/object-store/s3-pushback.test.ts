/** The S3 client against a store that pushes back (503 SlowDown with a Retry-After): the wait it asks for is kept. */
import { s3ObjectClient, s3SdkClient } from '../../../src/storage/object-store/s3';
import { listingBounds } from '../../../src/storage/object-store/listing-bounds';
import { effectError } from '../../helpers/effect-error';
import { useHttpServers } from '../../helpers/http-servers';

const never = new AbortController().signal;
const location = { bucket: 'models', prefix: 'm', display: 's3://models/m' };

describe('s3ObjectClient against a store that pushes back', () => {
  const serve = useHttpServers();

  it("carries the push-back's Retry-After, to a listing and to a read, for the store's pause and the loader", async () => {
    const busy = await serve((_request, response) => {
      response.writeHead(503, { 'content-type': 'application/xml', 'retry-after': '7' });
      response.end(
        '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>' +
          '<Message>Please reduce your request rate.</Message></Error>',
      );
    });
    const client = s3ObjectClient(
      s3SdkClient({
        endpoint: busy.url,
        region: 'us-east-1',
        addressing: 'path',
        credentials: 'anonymous',
        maxAttempts: 1,
      }),
    );
    const bounds = listingBounds('the test listing', { maxModelFiles: 10 });
    const listing = effectError(
      (async () => {
        for await (const object of client.list(location, never, bounds)) void object;
      })(),
    );
    expect(await listing).toMatchObject({ kind: 'http-status', status: 503, retryAfterMs: 7000 });
    const object = { key: 'm/a', size: 10, version: '"v1"' };
    const read = await effectError(client.read(location, object, 0, never));
    expect(read).toMatchObject({ kind: 'http-status', status: 503, retryAfterMs: 7000 });
  });
});
