/**
 * BatchWriter: one connection's bytes gathered into one of two buffers and written at their place in the file while
 * the other fills, so the connection keeps reading while the disk takes a batch.
 */
import type { FileWrites } from './file-writes';

/** Writes `length` bytes of `buffer` whole at `position` (a positional write may write less than asked). */
const writeWhole = async (
  file: FileWrites,
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
 * Writes one connection's consecutive bytes from `from` on, as `add` hands them in: at once while the file's writes
 * are inline (FileWrites), else gathered, a full buffer written on the thread pool while the other fills (the reader
 * waits only when that one's write still runs). Writes run in order, so `written` is always the end of a contiguous
 * run from `from`: a cut resumes exactly there.
 *
 * Why two: with one, a connection stopped reading for every write (18 ms per 1 MiB with 16 connections on one file,
 * a third of each connection's time). Why `add` copies: a chunk copied at once dies young, chunks held until their
 * write wait for a full collection (the GC took 1.4 s of a 1 GiB download); one writev of the chunks themselves
 * peaked at 155 MiB of RSS for 4 GiB on a busy host (132-135 with the copy): tried and dropped.
 */
export class BatchWriter {
  private filling = 0;
  private filled = 0;
  /** Where the buffer filling starts in the file. */
  private at: number;
  /** The write running, until it settles. */
  private running: Promise<void> | undefined;
  private failure: { readonly cause: unknown } | undefined;

  constructor(
    private readonly file: FileWrites,
    private readonly buffers: readonly [Buffer, Buffer],
    from: number,
    private readonly written: (end: number) => void,
    /** The error a failed write is thrown as. */
    private readonly writeError: (cause: unknown) => unknown,
  ) {
    this.at = from;
  }

  /** Writes `chunk` inline or copies it in: a promise when the caller must wait; fails with the first write's failure. */
  add(chunk: Uint8Array): Promise<void> | undefined {
    if (this.failure !== undefined) return this.settled();
    // A chunk of an eighth of a buffer or more goes as it is; smaller ones (a few KiB a read) are gathered first.
    const big = chunk.byteLength * 8 >= this.buffers[0].byteLength;
    if (big && this.filled === 0 && this.writesInline(chunk, chunk.byteLength)) return undefined;
    for (let copied = 0; copied < chunk.byteLength;) {
      const buffer = this.buffers[this.filling]!;
      const n = Math.min(chunk.byteLength - copied, buffer.byteLength - this.filled);
      buffer.set(chunk.subarray(copied, copied + n), this.filled);
      copied += n;
      const wait = this.landed(n);
      if (wait !== undefined) {
        return copied < chunk.byteLength ? wait.then(() => this.add(chunk.subarray(copied))) : wait;
      }
    }
    return undefined;
  }

  /** `bytes` more of the buffer filling hold data; a full one is written now, or after the running write. */
  private landed(bytes: number): Promise<void> | undefined {
    this.filled += bytes;
    if (this.filled < this.buffers[this.filling]!.byteLength) return undefined;
    if (this.running === undefined && this.failure === undefined) {
      if (this.writesInline(this.buffers[this.filling]!, this.filled)) this.filled = 0;
      else this.beginWrite();
      return undefined;
    }
    return this.settled().then(() => this.beginWrite());
  }

  /**
   * True when it wrote the first `length` bytes of `from` at once, on this thread (inline writes on, none of this
   * writer's running); a failed write is thrown, and every later call rejects with it.
   */
  private writesInline(from: Uint8Array, length: number): boolean {
    if (this.running !== undefined || this.failure !== undefined) return false;
    try {
      if (!this.file.inline(from, 0, length, this.at)) return false;
    } catch (cause) {
      this.failure = { cause: this.writeError(cause) };
      throw this.failure.cause;
    }
    this.at += length;
    this.written(this.at);
    return true;
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
