/** gcsAuthorization hands google-auth-library only a regular credentials file of bounded size. */
import { execFileSync } from 'node:child_process';
import { truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { defaultGcsEndpoint, gcsAuthorization } from '../../../src/storage/object-store/gcs-credentials';
import { useTempDir } from '../../helpers/temp-dir';

const url = new URL(`${defaultGcsEndpoint}/storage/v1/b/models/o`);

describe('gcsAuthorization, the credentials file', () => {
  const tmp = useTempDir('gcs-credentials-file');

  // The library reads GOOGLE_APPLICATION_CREDENTIALS whole, whatever it is: a huge file was read into memory, a
  // device without end (/dev/zero) grew the heap until the process died, and a FIFO held a thread for good.
  it('refuses a file over 1 MiB without handing it to the library, as a permanent failure naming it', async () => {
    const file = path.join(tmp.path, 'huge.json');
    await writeFile(file, '');
    await truncate(file, 64 * 2 ** 20);
    await expect(gcsAuthorization(defaultGcsEndpoint, file)(url)).rejects.toMatchObject({
      retryable: false,
      kind: 'refused',
      message: `the GCS credentials file ${file} is ${64 * 2 ** 20} bytes, over ${2 ** 20}; it is not read`,
    });
  });

  it('refuses a device and a FIFO without reading them', async () => {
    await expect(gcsAuthorization(defaultGcsEndpoint, '/dev/zero')(url)).rejects.toMatchObject({
      kind: 'refused',
      message: 'the GCS credentials file /dev/zero is a character device, not a regular file; it is not read',
    });
    const fifo = path.join(tmp.path, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(gcsAuthorization(defaultGcsEndpoint, fifo)(url)).rejects.toMatchObject({
      kind: 'refused',
      message: `the GCS credentials file ${fifo} is a FIFO (named pipe), not a regular file; it is not read`,
    });
  });
});

describe('gcsAuthorization, a credentials file the library cannot use', () => {
  const tmp = useTempDir('gcs-credentials-unusable');

  // A missing file or one that holds no credentials failed as `network`, retried with backoff --max-attempts
  // times (the storage initializer's minute of retries, the agent's model Retrying) for what no retry mends.
  it('fails for good, naming the file, when it does not exist', async () => {
    const file = path.join(tmp.path, 'missing.json');
    await expect(gcsAuthorization(defaultGcsEndpoint, file)(url)).rejects.toMatchObject({
      retryable: false,
      kind: 'refused',
      message: `the GCS credentials file ${file} does not exist`,
    });
  });

  it.each([
    ['no JSON', 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC', 'is no JSON credentials file'],
    [
      'a key without its fields',
      '{"type":"service_account"}',
      'cannot be used: private_key and client_email are required.',
    ],
  ])('fails for good, naming the file and never its content, when it holds %s', async (_, content, why) => {
    const file = path.join(tmp.path, 'key.json');
    await writeFile(file, content);
    const error = await gcsAuthorization(
      defaultGcsEndpoint,
      file,
    )(url).then(
      () => undefined,
      (cause: unknown) => cause as Error & { retryable?: boolean; kind?: string },
    );
    expect(error).toMatchObject({
      retryable: false,
      kind: 'refused',
      message: `the GCS credentials file ${file} ${why}`,
    });
    expect(error?.message).not.toContain('MIIE');
  });
});
