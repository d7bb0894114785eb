/** Test kit: the plain edits of a config file that are not kubelet's swap — in place, write-then-rename, delete-then-create. */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { errorCode } from '../core/errors';
import { sleep } from './wait';

/**
 * Rewrites `file` in place like `cp`/`cat >`: truncate (same inode), write the first `splitAtByte` bytes
 * (default: half), wait `pauseMs` (default 30), write the rest. Readers in between see a truncated file,
 * which is the case a watcher must survive by validating and keeping the last good config.
 */
export const writeInPlace = async (
  file: string,
  text: string | Buffer,
  options: { splitAtByte?: number; pauseMs?: number } = {},
): Promise<void> => {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const split = Math.max(0, Math.min(bytes.length, options.splitAtByte ?? Math.floor(bytes.length / 2)));
  const handle = await fsp.open(file, 'w'); // O_WRONLY|O_CREAT|O_TRUNC, as the shell's `>` does
  try {
    await handle.write(bytes, 0, split, 0);
    await sleep(options.pauseMs ?? 30);
    await handle.write(bytes, split, bytes.length - split, split);
  } finally {
    await handle.close();
  }
};

/**
 * Replaces `file` the way editors' "safe save" and write-file-atomic do: write a temporary file in the same
 * directory (same filesystem, so rename is atomic), then `rename` it over `file`. The name gets a new inode,
 * which kills watches on the old one; the existing file's permission bits are kept, as those tools do.
 */
export const writeThenRename = (file: string, text: string | Buffer): void => {
  const temp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).readUInt32BE(0)}`,
  );
  let mode = 0o644;
  try {
    mode = fs.statSync(file).mode & 0o7777;
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw err;
  }
  try {
    fs.writeFileSync(temp, text, { mode, flag: 'wx' });
    fs.chmodSync(temp, mode);
    fs.renameSync(temp, file);
  } catch (err) {
    try {
      fs.unlinkSync(temp);
    } catch {
      // The temp file was never created, or is gone already: the rename's failure is the one to report.
    }
    throw err;
  }
};

/**
 * Deletes `file` (it must exist, as with `rm`), waits `gapMs`, then creates it again with `text`: the
 * "rm then create" edit during which the file is missing (ENOENT) for the whole gap.
 */
export const deleteAndRecreate = async (
  file: string,
  text: string | Buffer,
  gapMs: number,
): Promise<void> => {
  await fsp.unlink(file);
  await sleep(gapMs);
  await fsp.writeFile(file, text);
};
