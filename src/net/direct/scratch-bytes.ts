/**
 * ScratchBytes: a direct connection's own memory: the response head as it arrives, and the body bytes no sink took
 * (a body read as chunks, the bytes read with the head or after a pause), until they are handed on.
 */
import { maxHeadBytes } from './response-head';

/** Where a read lands when the scratch has no room after the bytes pending; copied in at once (see `landed`). */
const spill = Buffer.allocUnsafeSlow(16 * 1024);

/**
 * Reads land in the first half of the scratch. The second is for reads that come after bytes still pending: a TLS
 * socket asked to stop reading still hands on what it has decrypted already (the rest of one socket read, up to about
 * 80 KiB).
 */
export class ScratchBytes {
  private readonly scratch = Buffer.allocUnsafeSlow(2 * maxHeadBytes);
  private headBytes = 0;
  /** Body bytes read and not yet handed on: `scratch[from, to)`. */
  private from = 0;
  private to = 0;

  /** Bytes pending. */
  get pending(): number {
    return this.to - this.from;
  }

  /** A new response's head starts. */
  startHead(): void {
    this.headBytes = 0;
  }

  /** Where the next read of the head lands. */
  headSpace(): Uint8Array {
    return this.scratch.subarray(this.headBytes, maxHeadBytes);
  }

  /** `bytes` of the head landed in `buffer`; the head so far. Throws past `maxHeadBytes`. */
  headLanded(buffer: Uint8Array, bytes: number): Uint8Array {
    // A kept-alive connection's buffer was picked before its request, not always at `headBytes`.
    const at = this.scratch.subarray(this.headBytes);
    if (buffer.buffer !== at.buffer || buffer.byteOffset !== at.byteOffset) at.set(buffer.subarray(0, bytes));
    this.headBytes += bytes;
    return this.scratch.subarray(0, this.headBytes);
  }

  /** The head so far is an interim answer ending at `bodyStart`: dropped, what follows it kept. */
  dropInterim(bodyStart: number): void {
    this.scratch.copyWithin(0, bodyStart, this.headBytes);
    this.headBytes -= bodyStart;
  }

  /** The head ended at `bodyStart`: the body bytes read with it are pending, moved to the start. */
  startBody(bodyStart: number): void {
    this.scratch.copyWithin(0, bodyStart, this.headBytes);
    this.from = 0;
    this.to = this.headBytes - bodyStart;
  }

  /**
   * Where the next body read lands when no sink takes it: the start when nothing is pending, else right after the
   * bytes pending, never over them; never an empty buffer either (TLS would hand on nothing, forever): `spill`.
   */
  readSpace(): Uint8Array {
    if (this.pending === 0) return this.scratch.subarray(0, maxHeadBytes);
    return this.to < this.scratch.byteLength ? this.scratch.subarray(this.to) : spill;
  }

  /** `bytes` of the body landed in `buffer` (a readSpace): they are pending now, after any that were. */
  bodyLanded(buffer: Uint8Array, bytes: number): void {
    let at = buffer.byteOffset - this.scratch.byteOffset;
    if (buffer.buffer !== this.scratch.buffer) {
      at = this.pending > 0 ? this.to : 0;
      if (at + bytes > this.scratch.byteLength) throw new Error('no room for the bytes a paused socket read');
      this.scratch.set(buffer.subarray(0, bytes), at);
    }
    if (this.pending === 0) this.from = at;
    this.to = at + bytes;
  }

  /** The bytes pending, still pending. */
  view(): Buffer {
    return this.scratch.subarray(this.from, this.to);
  }

  /** `bytes` of the pending ones were handed on. */
  take(bytes: number): void {
    this.from += bytes;
  }
}
