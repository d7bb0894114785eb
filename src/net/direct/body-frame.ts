/** BodyFrame: how much of one response body is still to come, by its framing, and its bytes handed to a reader. */
import { ignoreLastWait, type ByteSink } from './byte-sink';
import { ChunkedDecoder } from './chunked-decoder';
import { MalformedResponse, type BodyFraming } from './response-head';
import type { ScratchBytes } from './scratch-bytes';

/** What handing pending bytes to a sink came to. */
export type SinkStep =
  | { readonly _tag: 'ended' }
  | { readonly _tag: 'full' }
  | { readonly _tag: 'wait'; readonly wait: Promise<void> }
  | { readonly _tag: 'drained' };

const pastTheEnd = (): MalformedResponse => new MalformedResponse('bytes past the end of the body');

/** One body's progress: bytes left (length framing), the chunked decoder, or until the connection closes. */
export class BodyFrame {
  private remaining: number;
  private readonly decoder: ChunkedDecoder | undefined;

  constructor(readonly framing: BodyFraming) {
    this.remaining = framing._tag === 'length' ? framing.bytes : 0;
    this.decoder = framing._tag === 'chunked' ? new ChunkedDecoder() : undefined;
  }

  /** Body bytes still to come (length framing). */
  get left(): number {
    return this.remaining;
  }

  /** True once nothing of the body is left to read. */
  get done(): boolean {
    switch (this.framing._tag) {
      case 'none':
        return true;
      case 'length':
        return this.remaining === 0;
      case 'chunked':
        return this.decoder!.done;
      case 'until-close':
        return false;
    }
  }

  /**
   * Hands the bytes pending in `scratch` to `sink` (length framing), until they are all taken (`drained`), the body
   * ends (`ended`; throws MalformedResponse when bytes follow it), the sink has no room (`full`) or asks to wait.
   */
  toSink(scratch: ScratchBytes, sink: ByteSink): SinkStep {
    while (scratch.pending > 0 && this.remaining > 0) {
      const space = sink.space(this.remaining);
      if (space.byteLength === 0) return { _tag: 'full' };
      const take = Math.min(space.byteLength, scratch.pending, this.remaining);
      space.set(scratch.view().subarray(0, take));
      scratch.take(take);
      const step = this.landed(sink, take);
      if (step._tag === 'wait') return step;
    }
    if (this.remaining > 0) return { _tag: 'drained' };
    if (scratch.pending > 0) throw pastTheEnd();
    return { _tag: 'ended' };
  }

  /**
   * `bytes` of the body landed in `sink`'s space (a socket read straight into it, or copied from the scratch):
   * `ended` once the body is whole (the sink's last wait holds nothing back), else the sink's wait, if it asks one.
   */
  landed(sink: ByteSink, bytes: number): SinkStep {
    this.remaining -= bytes;
    const wait = sink.landed(bytes);
    if (this.remaining === 0) {
      ignoreLastWait(wait);
      return { _tag: 'ended' };
    }
    return wait !== undefined ? { _tag: 'wait', wait } : { _tag: 'drained' };
  }

  /**
   * Hands the bytes pending in `scratch` to `push` as copied chunks (decoded, for chunked framing); says whether the
   * reader wants more. Throws MalformedResponse when bytes follow the body's end.
   */
  toChunks(scratch: ScratchBytes, push: (chunk: Buffer | null) => boolean): boolean {
    const pending = scratch.view();
    scratch.take(pending.byteLength);
    if (this.decoder !== undefined) {
      let wantsMore = true;
      const used = this.decoder.push(pending, (data) => (wantsMore = push(Buffer.from(data)) && wantsMore));
      if (used < pending.byteLength) throw pastTheEnd();
      return wantsMore;
    }
    if (pending.byteLength === 0) return true;
    if (this.framing._tag === 'length') {
      if (pending.byteLength > this.remaining) throw pastTheEnd();
      this.remaining -= pending.byteLength;
    }
    return push(Buffer.from(pending));
  }
}
