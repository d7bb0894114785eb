/**
 * lockFile: an exclusive flock(2) on a lock file, shared by every process on the node, that dies with its holder.
 * Node.js has no flock; util-linux's `flock <fd>` (in every Debian image: util-linux is essential) takes the lock on
 * the open file description it inherits from us and exits, and the lock stays ours until we close the fd, or the
 * kernel closes it when we die, kill -9 included. A pid file would outlive a killed holder.
 */
import { spawn } from 'node:child_process';
import { constants, type Stats } from 'node:fs';
import { lstat, open, unlink } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { errorCode } from '../core/errors';
import { step } from './durable-fs';

/** A held lock: `release` closes the file, which drops the lock (once; later calls do nothing). */
export interface HeldLock {
  readonly release: () => Promise<void>;
}

// O_NOFOLLOW: a link planted where the lock file goes is refused, not followed to a file of someone else's.
const lockFlags = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

// Locks of a file removed while waited for, taken again on the one at the path before giving up.
const maxRelocks = 100;

/**
 * Waits up to `waitMs` for an exclusive lock on `path` (created 0600 if missing): rejects once that passes (a lock
 * held for ever by a stuck or hostile process), or with `signal`'s reason once it aborts. The lock is held on the
 * file the path names once it is taken: a holder may remove the lock file (`removeHeldLockFile`), and a waiter that
 * then gets the lock of the removed file locks the one at the path instead.
 */
export const lockFile = async (path: string, waitMs: number, signal: AbortSignal): Promise<HeldLock> => {
  const deadline = performance.now() + waitMs;
  for (let relocks = 0; ; relocks++) {
    const taken = await lockOpenFile(path, Math.max(0, deadline - performance.now()), signal, waitMs);
    if (await namesLocked(path, taken.file)) return taken;
    await taken.release();
    if (relocks === maxRelocks) throw new Error(`${path} was removed each time its lock was taken`);
  }
};

/**
 * Removes the lock file at `path` while its lock is held (before `release`): the waiters on it take the lock of the
 * file made next at the path (`lockFile`). A lock file already gone is no failure.
 */
export const removeHeldLockFile = (path: string): Promise<void> =>
  unlink(path).catch((cause: unknown) => {
    if (errorCode(cause) !== 'ENOENT') throw cause;
  });

/** True when `path` still names the `file` locked (dev and inode), not a removed one or one made since. */
const namesLocked = async (path: string, file: Stats): Promise<boolean> => {
  const now = await lstat(path).catch(() => undefined);
  return now !== undefined && now.dev === file.dev && now.ino === file.ino;
};

/** One lock of the file `path` names when opened, within `waitMs` (a failure tells the whole wait, `shownWaitMs`). */
const lockOpenFile = async (
  path: string,
  waitMs: number,
  signal: AbortSignal,
  shownWaitMs: number,
): Promise<HeldLock & { readonly file: Stats }> => {
  signal.throwIfAborted();
  const handle = await step(`cannot open the lock file ${path}`, () => open(path, lockFlags, 0o600));
  let closed: Promise<void> | undefined;
  const release = (): Promise<void> => (closed ??= handle.close().catch(() => undefined));
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error(`the lock file ${path} is not a regular file`);
    await new Promise<void>((resolve, reject) => {
      const child = spawn('flock', ['--exclusive', '--wait', String(waitMs / 1000), '3'], {
        stdio: ['ignore', 'ignore', 'pipe', handle.fd],
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-500)));
      const onAbort = (): void => void child.kill('SIGKILL');
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort(); // aborted while the file was opened
      child.on('error', (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(errorCode(error) === 'ENOENT' ? new Error('flock (util-linux) is not installed') : error);
      });
      child.on('exit', (code) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) return reject(signal.reason as Error);
        if (code === 0) return resolve();
        // flock exits 1 when --wait passed with the lock still held.
        if (code === 1)
          return reject(new Error(`${path} stayed locked by another process for ${shownWaitMs} ms`));
        reject(new Error(`flock ${path} exited ${code}: ${stderr.trim()}`));
      });
    });
    return { release, file: info };
  } catch (error) {
    await release();
    throw error;
  }
};
