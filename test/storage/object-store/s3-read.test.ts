/** The S3 client's ranged reads: a body's failure is marked untrusted when its answer was not framed by its length. */
import type { S3Client } from '@aws-sdk/client-s3';
import { s3ObjectClient } from '../../../src/storage/object-store/s3';
import { UntrustedBytes } from '../../../src/storage/parts/fetch-parts';

const location = { bucket: 'models', prefix: 'm', display: 's3://models/m' };
const object = { key: 'm/weights.bin', size: 100, version: '"v1"' };
const never = new AbortController().signal;

/** A client whose GetObject answers bytes 10-19 with `contentLength`, the body breaking off after 4 bytes. */
const clientAnswering = (contentLength: number | undefined): S3Client => {
  async function* cutBody(): AsyncGenerator<Uint8Array> {
    yield Buffer.from('abcd');
    await Promise.resolve();
    throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
  }
  const send = () =>
    Promise.resolve({
      Body: cutBody(),
      ContentRange: 'bytes 10-19/100',
      ETag: '"v1"',
      ContentLength: contentLength,
    });
  return { send } as unknown as S3Client;
};

const failureOfRead = async (contentLength: number | undefined): Promise<unknown> => {
  const body = await s3ObjectClient(clientAnswering(contentLength)).read(location, object, 10, never, 20);
  try {
    for await (const chunk of body) expect(chunk.byteLength).toBe(4);
  } catch (cause) {
    return cause;
  }
  throw new Error('the body did not fail');
};

describe('s3ObjectClient ranged reads', () => {
  it('marks the failure of a range answered without Content-Length as untrusted, its cause the S3 failure', async () => {
    const failure = await failureOfRead(undefined);
    expect(failure).toBeInstanceOf(UntrustedBytes);
    expect((failure as UntrustedBytes).cause).toMatchObject({ kind: 'network', retryable: true });
  });

  it('keeps the failure of a range framed by its Content-Length as it is', async () => {
    const failure = await failureOfRead(10);
    expect(failure).not.toBeInstanceOf(UntrustedBytes);
    expect(failure).toMatchObject({ kind: 'network', retryable: true });
  });
});
