/** credentialsFileVersion: a file an SDK reads whole (a key, a token, the shared files) is only a regular one, bounded. */
import { stat } from 'node:fs/promises';
import { permanentError } from '../../core/errors';
import { entryKind } from '../../fs';

// A service account key, an external account, the AWS shared files, a web identity token: a few KiB each.
const maxCredentialsFileBytes = 2 ** 20;

/**
 * What identifies `file`'s content cheaply: device, inode, size and mtime (a kubelet secret swap changes them);
 * `missing` when there is none (the SDK's to report or skip). Throws the permanent `refused` failure naming the file
 * (`the GCS credentials file …`, `store`: `GCS`) when it is no regular file of at most maxCredentialsFileBytes: the
 * SDKs read these files whole, so a device without end (/dev/zero) would grow the heap until the process died, a
 * FIFO hold a thread for good.
 */
export const credentialsFileVersion = async (file: string, store: string): Promise<string> => {
  const stats = await stat(file).catch(() => undefined);
  if (stats === undefined) return 'missing';
  const refuse = (why: string) =>
    permanentError('refused', `the ${store} credentials file ${file} ${why}; it is not read`);
  if (!stats.isFile()) throw refuse(`is ${entryKind(stats)}, not a regular file`);
  if (stats.size > maxCredentialsFileBytes)
    throw refuse(`is ${stats.size} bytes, over ${maxCredentialsFileBytes}`);
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
};
