/** checkCredentialsFile: a file an SDK reads whole (a key, a token, the shared files) is only a regular one, bounded. */
import type { Stats } from 'node:fs';
import { permanentError } from '../../core/errors';
import { entryKind } from '../../fs';

// A service account key, an external account, the AWS shared files, a web identity token: a few KiB each.
export const maxCredentialsFileBytes = 2 ** 20;

/**
 * Throws the permanent `refused` failure naming `file` (`what`: `the GCS credentials file`) when `stats` are not
 * those of a regular file of at most maxCredentialsFileBytes: the SDKs read these files whole, so a device without
 * end (/dev/zero) would grow the heap until the process died, a FIFO hold a thread for good.
 */
export const checkCredentialsFile = (stats: Stats, file: string, what: string): void => {
  const refuse = (why: string) => permanentError('refused', `${what} ${file} ${why}; it is not read`);
  if (!stats.isFile()) throw refuse(`is ${entryKind(stats)}, not a regular file`);
  if (stats.size > maxCredentialsFileBytes)
    throw refuse(`is ${stats.size} bytes, over ${maxCredentialsFileBytes}`);
};
