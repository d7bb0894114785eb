/** The AWS default chain is handed only regular files of bounded size: its SDK reads each one whole. */
import { execFileSync } from 'node:child_process';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { useTempDir } from '../../helpers/temp-dir';

const tmp = useTempDir('s3-credentials-files');

const chainOf = (env: Record<string, string>) => {
  const credentials = s3Credentials({ anonymous: false }, { HOME: tmp.path, ...env });
  if (credentials === 'anonymous') throw new Error('anonymous');
  return credentials;
};

describe('s3Credentials, the files of the default chain', () => {
  // The SDK reads the shared files and the web identity token whole: a huge file was read into memory, a device
  // without end (/dev/zero) grew the heap until the process died, a FIFO held a thread for good.
  it('refuses a shared credentials file over 1 MiB, as a permanent failure naming it', async () => {
    const file = join(tmp.path, 'credentials');
    await writeFile(
      file,
      '[default]\naws_access_key_id = AKIAFILESBOUND\naws_secret_access_key = files-bound-secret\n',
    );
    await truncate(file, 2 * 2 ** 20);
    await expect(chainOf({ AWS_SHARED_CREDENTIALS_FILE: file })()).rejects.toMatchObject({
      retryable: false,
      kind: 'refused',
      message: `the AWS credentials file ${file} is ${2 * 2 ** 20} bytes, over ${2 ** 20}; it is not read`,
    });
  });

  it('refuses a device as the config file and a FIFO as the web identity token file', async () => {
    await expect(chainOf({ AWS_CONFIG_FILE: '/dev/zero' })()).rejects.toMatchObject({
      kind: 'refused',
      message: 'the AWS credentials file /dev/zero is a character device, not a regular file; it is not read',
    });
    const fifo = join(tmp.path, 'token');
    execFileSync('mkfifo', [fifo]);
    const env = { AWS_WEB_IDENTITY_TOKEN_FILE: fifo, AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/models' };
    await expect(chainOf(env)()).rejects.toMatchObject({
      kind: 'refused',
      message: `the AWS credentials file ${fifo} is a FIFO (named pipe), not a regular file; it is not read`,
    });
  });
});
