/** The files DefaultAzureCredential reads whole are checked before each token is asked for. */
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type AzureTokenCredential,
  withCheckedFiles,
} from '../../../src/storage/object-store/azure-credentials';
import { useTempDir } from '../../helpers/temp-dir';

const tmp = useTempDir('azure-credentials-files');

/** A stand-in for DefaultAzureCredential, counting the tokens asked of it, behind withCheckedFiles. */
const counted = (env: Record<string, string>) => {
  const asked = { count: 0 };
  const credential: AzureTokenCredential = {
    getToken: () => {
      asked.count++;
      return Promise.resolve({ token: 'stand-in-token', expiresOnTimestamp: Date.now() + 3_600_000 });
    },
  };
  return { asked, tokenCredential: withCheckedFiles(env, credential) };
};

describe('withCheckedFiles, the files of Azure AD', () => {
  // The SDK reads AZURE_FEDERATED_TOKEN_FILE (and a client certificate) whole at each token: a FIFO held a thread for
  // good, a device without end (/dev/zero) grew the heap until the process died.
  it('refuses a FIFO or a device as the federated token file or client certificate, asking no token', async () => {
    const fifo = path.join(tmp.path, 'token');
    execFileSync('mkfifo', [fifo]);
    for (const [name, file, kind] of [
      ['AZURE_FEDERATED_TOKEN_FILE', fifo, 'a FIFO (named pipe)'],
      ['AZURE_CLIENT_CERTIFICATE_PATH', '/dev/zero', 'a character device'],
    ] as const) {
      const { asked, tokenCredential } = counted({ AZURE_CLIENT_ID: 'id', [name]: file });
      await expect(tokenCredential.getToken('https://storage.azure.com/.default')).rejects.toMatchObject({
        kind: 'refused',
        retryable: false,
        message: `the Azure credentials file ${file} is ${kind}, not a regular file; it is not read`,
      });
      expect(asked.count).toBe(0);
    }
  });

  it('asks the token of a regular file, and leaves a missing one to the SDK', async () => {
    const file = path.join(tmp.path, 'federated');
    await writeFile(file, 'a-token');
    for (const tokenFile of [file, path.join(tmp.path, 'missing')]) {
      const { asked, tokenCredential } = counted({ AZURE_FEDERATED_TOKEN_FILE: tokenFile });
      await tokenCredential.getToken('https://storage.azure.com/.default');
      expect(asked.count).toBe(1);
    }
  });
});
