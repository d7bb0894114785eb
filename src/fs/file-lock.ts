/**
 * lockFile: an exclusive flock(2) on a lock file, shared by every process on the node, that dies with its holder.
 * Node.js has no flock; util-linux's `flock <fd>` (in every Debian image: util-linux is essential) takes the lock on
 * the open file description it inherits from us and exits, and the lock stays ours until we close the fd, or the
 * kernel closes it when we die, kill -9 included. A pid file would outlive a killed holder.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { errorCode } from '../core/errors';
import { step } from './durable-fs';

/** A held lock: `release` closes the file, which drops the lock (once; later calls do nothing). */
export interface HeldLock {
  readonly release: () => Promise<void>;
}

// O_NOFOLLOW: a link planted where the lock file goes is refused, not followed to a file of someone else's.
const lockFlags = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Waits up to `waitMs` for an exclusive lock on `path` (created 0600 if missing): rejects once that passes (a lock
 * held for ever by a stuck or hostile process), or with `signal`'s reason once it aborts.
 */
export const lockFile = async (path: string, waitMs: number, signal: AbortSignal): Promise<HeldLock> => {
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
        if (code === 1) return reject(new Error(`${path} stayed locked by another process for ${waitMs} ms`));
        reject(new Error(`flock ${path} exited ${code}: ${stderr.trim()}`));
      });
    });
    return { release };
  } catch (error) {
    await release();
    throw error;
  }
};
