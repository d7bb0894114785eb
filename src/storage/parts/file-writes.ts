/**
 * fileWrites: how the batches of one big file reach the page cache: on the event loop, right after the socket read
 * that brought them, while such a write takes no time; else one at a time on the thread pool.
 */
import { writeSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/** A file's positional writes (a FileHandle, or a test's stand-in). */
export type PositionalFile = Pick<FileHandle, 'write'> & { readonly fd?: number };

/** One file's writes, shared by all its connections. */
export interface FileWrites {
  /** Writes `length` bytes of `buffer` from `offset` at `position` on this thread: false once inline writes are off. */
  inline(buffer: Uint8Array, offset: number, length: number, position: number): boolean;
  /** A positional write on the thread pool; the file's writes run one at a time, in the order asked. */
  readonly write: PositionalFile['write'];
}

/** How long inline writes may keep the event loop: see fileWrites. */
export interface InlineLimits {
  /** A write that takes longer is slow (a batch normally takes well under a millisecond). */
  readonly slowMs: number;
  /** Inline writes end for the file once its slow writes together took longer. */
  readonly slowTotalMs: number;
}

/**
 * Slow writes (over 10 ms) that together take over 100 ms end inline writes for the file: the page cache holds writes
 * back, and the event loop must not wait on the disk. Not one: on a busy host that is often the thread descheduled.
 */
export const defaultInlineLimits: InlineLimits = { slowMs: 10, slowTotalMs: 100 };

/**
 * The writes of `file`. Inline within `limits` (null, or no `fd`: never): writing what a socket read just brought from
 * the same thread costs the least (1 GiB: 1.2-1.4 CPU-s inline, 1.7-4.1 on the thread pool, whose core copies bytes
 * another read). On the thread pool one at a time: concurrent writes to one ext4 file spin on its inode lock
 * (11 % of the machine's CPU in `rwsem_spin_on_owner`).
 */
export const fileWrites = (
  file: PositionalFile,
  limits: InlineLimits | null = defaultInlineLimits,
): FileWrites => {
  let inlineOn = file.fd !== undefined && limits !== null;
  let slowTotalMs = 0;
  let last: Promise<unknown> = Promise.resolve();
  let inFlight = 0;
  return {
    inline: (buffer, offset, length, position) => {
      if (!inlineOn) return false;
      const started = performance.now();
      for (let done = 0; done < length;) {
        done += writeSync(file.fd!, buffer, offset + done, length - done, position + done);
      }
      const tookMs = performance.now() - started;
      if (tookMs > limits!.slowMs) {
        slowTotalMs += tookMs;
        inlineOn = slowTotalMs <= limits!.slowTotalMs;
      }
      return true;
    },
    write: ((buffer: Buffer, offset: number, length: number, position: number) => {
      const start = () => file.write(buffer, offset, length, position);
      // Started now when no write of the file runs: no turn of the event loop lost to the queue.
      const mine = inFlight === 0 ? start() : last.then(start);
      inFlight++;
      const settled = () => void inFlight--;
      last = mine.then(settled, settled);
      return mine;
    }) as PositionalFile['write'],
  };
};
