/** The AWS default chain is handed only regular files of bounded size: its SDK reads each one whole. */
import { execFileSync } from 'node:child_process';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { useTempDir } from '../../helpers/temp-dir';

const tmp = useTempDir('s3-credentials-files');

const chainOf = (env: Record<string, string>, recheckMs?: number) => {
  const credentials = s3Credentials(
    { anonymous: false, ...(recheckMs !== undefined ? { recheckMs } : {}) },
    { HOME: tmp.path, ...env },
  );
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

  // NTP stepping the wall clock back (or a VM resumed) put the next look at the files off by as long as the step:
  // a rotated Secret's new keys went unused for that long, every download refused with the old ones.
  it('reads a rotated credentials file again after its recheck when the wall clock was set back an hour', async () => {
    const file = join(tmp.path, 'credentials');
    const write = (id: string) =>
      writeFile(file, `[default]\naws_access_key_id = ${id}\naws_secret_access_key = secret-of-${id}\n`);
    await write('AKIABEFORESTEP');
    const chain = chainOf(
      { AWS_SHARED_CREDENTIALS_FILE: file, AWS_CONFIG_FILE: join(tmp.path, 'config') },
      20,
    );
    expect((await chain()).accessKeyId).toBe('AKIABEFORESTEP');
    const setBack = Date.now() - 3_600_000;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => setBack);
    try {
      await write('AKIAROTATEDKEYS');
      await new Promise((resolve) => setTimeout(resolve, 200)); // ten recheck intervals
      expect((await chain()).accessKeyId).toBe('AKIAROTATEDKEYS');
    } finally {
      clock.mockRestore();
    }
  });
});
