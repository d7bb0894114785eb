/**
 * BatchWriter: one connection's bytes gathered into one of two buffers and written at their place in the file while
 * the other fills, so the connection keeps reading while the disk takes a batch.
 */
import type { FileHandle } from 'node:fs/promises';
import type { ByteSink } from '../../net';

/** What a BatchWriter writes to: a file's positional writes (a FileHandle, or `oneWriteAtATime` of one). */
export type PositionalFile = Pick<FileHandle, 'write'>;

/**
 * `file` with its positional writes run one at a time, in the order asked. Why: the connections of one big file
 * each wrote their batches at once, and concurrent writes to one ext4 file take its inode lock in turn while the
 * others spin on it (profiled through the relay: 11 % of the machine's CPU in `rwsem_spin_on_owner`, the agent's
 * system time 1.3-4.3 CPU-seconds per GiB against 1.1-2.0 with writes in a row, 4 runs each); one 512 KiB write
 * takes well under a millisecond, so one at a time keeps up with any link.
 */
export const oneWriteAtATime = (file: PositionalFile): PositionalFile => {
  let last: Promise<unknown> = Promise.resolve();
  return {
    write: ((buffer: Buffer, offset: number, length: number, position: number) => {
      const mine = last.then(() => file.write(buffer, offset, length, position));
      last = mine.catch(() => undefined);
      return mine;
    }) as PositionalFile['write'],
  };
};

/** Writes `length` bytes of `buffer` whole at `position` (a positional write may write less than asked). */
const writeWhole = async (
  file: PositionalFile,
  buffer: Buffer,
  length: number,
  position: number,
): Promise<void> => {
  for (let done = 0; done < length;) {
    const { bytesWritten } = await file.write(buffer, done, length - done, position + done);
    done += bytesWritten;
  }
};

/**
 * Writes consecutive bytes from `from` on, through two buffers owned by one connection: a socket reads straight into
 * the one filling (`space`, `landed`: a ByteSink), or `add` copies a chunk in; when it is full its write starts and
 * the other fills; the reader waits only when the other's write is still running. Writes run one at a time and in order, so `written` (told after each one) is
 * always the end of a contiguous run from `from`: a cut resumes exactly there.
 *
 * Why two: with one buffer, a connection stopped reading for every write; on this kind of machine a 1 MiB write into
 * the page cache took 18 ms on average while 16 connections wrote one file (a thread-pool queue and the inode's
 * lock), a third of each connection's time, and the relay's per-connection rate was lost while it waited.
 *
 * Why `add` copies (for bodies that come as chunks: undici's, the SDKs'): a socket's chunk copied at once dies young; chunks held until their write outlive the young
 * generation and wait for a full collection (measured: the GC took 1.4 s of a 1 GiB download). Writing the chunks
 * themselves with one writev per batch saved 4-8 % of the CPU on a quiet host, but on a busy one the 4 GiB download
 * peaked at 155 MiB of RSS (132-135 with the copy, in every run): tried and dropped.
 */
export class BatchWriter implements ByteSink {
  private readonly buffers: readonly [Buffer, Buffer];
  private filling = 0;
  private filled = 0;
  /** Where the buffer filling starts in the file. */
  private at: number;
  /** The write running, until it settles. */
  private running: Promise<void> | undefined;
  private failure: { readonly cause: unknown } | undefined;

  constructor(
    private readonly file: PositionalFile,
    buffers: readonly [Buffer, Buffer],
    from: number,
    private readonly written: (end: number) => void,
    /** The error a failed write is thrown as. */
    private readonly writeError: (cause: unknown) => unknown,
  ) {
    this.buffers = buffers;
    this.at = from;
  }

  /** Copies `chunk` in, writing each buffer as it fills; rejects with the first write's failure. */
  async add(chunk: Uint8Array): Promise<void> {
    for (let copied = 0; copied < chunk.byteLength;) {
      const buffer = this.buffers[this.filling]!;
      const n = Math.min(chunk.byteLength - copied, buffer.byteLength - this.filled);
      buffer.set(chunk.subarray(copied, copied + n), this.filled);
      copied += n;
      await this.landed(n);
    }
  }

  /** The free end of the buffer filling, at most `max` bytes: where a socket reads straight in (ByteSink). */
  space(max: number): Uint8Array {
    const buffer = this.buffers[this.filling]!;
    return buffer.subarray(
      this.filled,
      this.filled + Math.max(0, Math.min(max, buffer.byteLength - this.filled)),
    );
  }

  /**
   * `bytes` more of the buffer filling hold data. A full buffer starts its write at once when none is running, else
   * the promise waits for the running one and then starts it (read nothing more until it settles); rejects with the
   * first write's failure.
   */
  landed(bytes: number): Promise<void> | undefined {
    this.filled += bytes;
    if (this.filled < this.buffers[this.filling]!.byteLength) return undefined;
    if (this.running === undefined && this.failure === undefined) {
      this.beginWrite();
      return undefined;
    }
    return this.settled().then(() => this.beginWrite());
  }

  /** Writes what is gathered and waits for every write; rejects with the first write's failure. */
  async flush(): Promise<void> {
    await this.settled();
    if (this.filled > 0) this.beginWrite();
    await this.settled();
  }

  /** Starts writing the buffer filling (no write runs); the next bytes fill the other buffer. */
  private beginWrite(): void {
    const [buffer, length, position] = [this.buffers[this.filling]!, this.filled, this.at];
    const write = writeWhole(this.file, buffer, length, position).then(
      () => this.written(position + length),
      (cause: unknown) => {
        this.failure ??= { cause: this.writeError(cause) };
      },
    );
    this.running = write;
    void write.finally(() => {
      if (this.running === write) this.running = undefined;
    });
    this.filling = 1 - this.filling;
    this.filled = 0;
    this.at = position + length;
  }

  /** Waits for the write running, if one is; throws the first failure. */
  private async settled(): Promise<void> {
    await this.running;
    if (this.failure !== undefined) throw this.failure.cause;
  }
}
