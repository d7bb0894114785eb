/**
 * DirectConnection: one HTTP/1.1 connection whose socket reads land where its reader says: a body framed by its
 * length goes straight from the kernel into the reader's own buffers (a ByteSink), with no buffer allocated and no
 * stream or parser between; any other body is handed on as copied chunks.
 *
 * Why our own: reading a ranged part through undici cost 1.1-1.4 CPU-seconds of user time per GiB (a fresh buffer
 * per socket read, a copy into its parser's memory, a stream, an iterator), through a handler of its own (`dispatch`)
 * 1.0-1.2; read this way, 0.1 (1 GiB over 8 loopback connections, the same file writes). On the 2 cores the agent
 * shares with the model server, that CPU is the download's speed. Node's `onread` option (net and tls) is what makes
 * it possible; no HTTP client offers it.
 */
import type { Socket } from 'node:net';
import { ChunkedDecoder } from './chunked-decoder';
import {
  MalformedResponse,
  maxHeadBytes,
  parseResponseHead,
  type BodyFraming,
  type ResponseHead,
} from './response-head';

/** Where a direct body's bytes go: the reader's own memory. */
export interface ByteSink {
  /** The memory the next socket read may fill, at most `max` bytes long; empty: the reader wants no more bytes. */
  space(max: number): Uint8Array;
  /** `bytes` bytes landed at the start of the last space; a promise: read nothing more until it settles. */
  landed(bytes: number): Promise<void> | undefined;
}

/** A timeout of a direct request; `name` and `code` are what the SDKs' retry rules and transportError look for. */
export class DirectTimeout extends Error {
  override readonly name = 'TimeoutError';
  constructor(
    readonly code: 'MODELSYNC_HEADERS_TIMEOUT' | 'MODELSYNC_BODY_TIMEOUT' | 'MODELSYNC_CONNECT_TIMEOUT',
    ms: number,
  ) {
    super(
      code === 'MODELSYNC_BODY_TIMEOUT'
        ? `no body bytes for ${ms} ms`
        : code === 'MODELSYNC_HEADERS_TIMEOUT'
          ? `no response head within ${ms} ms`
          : `no connection within ${ms} ms`,
    );
  }
}

/** The connection closed before its answer was whole: `ECONNRESET`, as Node's own HTTP client says it. */
const cutShort = (message: string): Error => Object.assign(new Error(message), { code: 'ECONNRESET' });

/** How the reader of the body in flight takes its bytes. */
type Reader =
  | { readonly _tag: 'direct'; readonly sink: ByteSink; readonly done: Settle<boolean> }
  | {
      readonly _tag: 'chunks';
      readonly push: (chunk: Buffer | null) => boolean;
      readonly fail: (cause: Error) => void;
    };

interface Settle<T> {
  readonly resolve: (value: T) => void;
  readonly reject: (cause: Error) => void;
}

type Phase =
  | { readonly _tag: 'idle' }
  | { readonly _tag: 'head'; readonly answer: Settle<ResponseHead> }
  | { readonly _tag: 'body'; readonly head: ResponseHead; reader: Reader | undefined }
  | { readonly _tag: 'closed' };

/** What a connection tells its owner: it is free for another request, or gone. */
export interface ConnectionOwner {
  free(connection: DirectConnection): void;
}

/**
 * One socket, one request at a time. `send` writes a request and resolves with its head; the body is then read with
 * `readInto` (length-framed bodies only: `directFraming`) or `readChunks`, or dropped with `abandon`. A body read
 * whole on a reusable answer frees the connection for the next request; anything else closes it.
 */
export class DirectConnection {
  /**
   * The head's bytes, and every read no sink takes (chunks, bytes after a pause): reads land here then, in its first
   * half. The second is for reads that come after the bytes pending: a TLS socket asked to stop reading still hands
   * on what it has decrypted already (the rest of one socket read, up to about 80 KiB; see nextBuffer).
   */
  private readonly scratch = Buffer.allocUnsafeSlow(2 * maxHeadBytes);
  private headBytes = 0;
  /** Body bytes read into `scratch` and not yet handed on: `scratch[pendingFrom, pendingTo)`. */
  private pendingFrom = 0;
  private pendingTo = 0;
  private phase: Phase = { _tag: 'idle' };
  /** Body bytes still to come (length framing). */
  private left = 0;
  private decoder: ChunkedDecoder | undefined;
  /** The space the next read fills when it is the sink's, else undefined (the read lands in `scratch`). */
  private space: Uint8Array | undefined;
  /** The reader asked us to wait: no read until it says so. */
  private parked = false;
  private headTimer: NodeJS.Timeout | undefined;
  private idleTimeoutMs = 0;
  private stopListening: () => void = () => undefined;
  /** A response byte was read since the last `send`: a failure now cannot be a stale kept-alive socket's. */
  sawResponse = false;
  /** Requests this connection carried. */
  requests = 0;

  private socketOf: Socket | undefined;
  /** A failure of a body nobody read yet: the reader that comes gets it. */
  private unreadFailure: Error | undefined;

  constructor(private readonly owner: ConnectionOwner) {}

  /** The `onread` option to make the socket with: reads land where `nextBuffer` says, and `received` is told. */
  readonly onread = {
    buffer: (): Uint8Array => this.nextBuffer(),
    callback: (bytes: number, buffer: Uint8Array): boolean => this.received(bytes, buffer),
  };

  /** Takes on `socket`, made with `onread` and connected. */
  attach(socket: Socket): void {
    this.socketOf = socket;
    socket.on('error', (cause) => this.fail(cause));
    socket.on('end', () => this.ended());
    socket.on('close', () => this.ended());
    socket.on('timeout', () => this.fail(new DirectTimeout('MODELSYNC_BODY_TIMEOUT', this.idleTimeoutMs)));
  }

  private get socket(): Socket {
    if (this.socketOf === undefined)
      throw new Error('a direct connection used before its socket is attached');
    return this.socketOf;
  }

  /** Idle in a pool: its socket alone does not keep the process alive (`busy` undoes it). */
  idle(): void {
    this.socketOf?.unref();
  }

  busy(): void {
    this.socketOf?.ref();
  }

  get open(): boolean {
    return this.phase._tag !== 'closed' && this.socketOf?.destroyed === false;
  }

  /**
   * Writes `request` (a whole request head, no body) and resolves with the response's head once it is read (a 1xx
   * is skipped); rejects on a timeout (`headersTimeoutMs` for the head), `signal`, a malformed head or a lost
   * connection, and the connection is then closed. Body bytes are timed by `idleTimeoutMs` until the body ends.
   */
  send(
    request: string,
    timeouts: { readonly headersTimeoutMs: number; readonly idleTimeoutMs: number },
    signal: AbortSignal,
  ): Promise<ResponseHead> {
    if (this.phase._tag !== 'idle')
      return Promise.reject(new Error('a direct connection carries one request at a time'));
    this.requests += 1;
    this.sawResponse = false;
    this.headBytes = 0;
    this.idleTimeoutMs = timeouts.idleTimeoutMs;
    const onAbort = (): void => this.fail(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    this.stopListening = () => signal.removeEventListener('abort', onAbort);
    return new Promise<ResponseHead>((resolve, reject) => {
      this.phase = { _tag: 'head', answer: { resolve, reject } };
      if (signal.aborted) return this.fail(abortError(signal));
      this.headTimer = setTimeout(
        () => this.fail(new DirectTimeout('MODELSYNC_HEADERS_TIMEOUT', timeouts.headersTimeoutMs)),
        timeouts.headersTimeoutMs,
      );
      // One byte a character, as node:http writes heads: requestHead allows obs-text (\x80-\xff) in values.
      this.socket.write(request, 'latin1');
      this.resume();
    });
  }

  /** The body in flight is framed by its length, so `readInto` can take it. */
  get directFraming(): boolean {
    return this.phase._tag === 'body' && this.phase.head.framing._tag === 'length';
  }

  /**
   * Reads the body into `sink` until it ends (resolves true) or the sink has no space left for the bytes still to
   * come (false: the connection is closed, its unread bytes with it). Rejects as `send` does.
   */
  readInto(sink: ByteSink): Promise<boolean> {
    const phase = this.phase;
    if (phase._tag !== 'body' || phase.reader !== undefined || !this.directFraming) {
      return Promise.reject(this.unreadFailure ?? new Error('readInto needs an unread length-framed body'));
    }
    return new Promise<boolean>((resolve, reject) => {
      phase.reader = { _tag: 'direct', sink, done: { resolve, reject } };
      this.safely(() => this.pump());
    });
  }

  /**
   * Hands the body on as chunks (copies) to `push` (Readable's: false asks for no more until `more` is called; null
   * ends the body), failures to `fail`.
   */
  readChunks(push: (chunk: Buffer | null) => boolean, fail: (cause: Error) => void): void {
    const phase = this.phase;
    if (phase._tag !== 'body' || phase.reader !== undefined) {
      return fail(this.unreadFailure ?? new Error('readChunks needs an unread body'));
    }
    phase.reader = { _tag: 'chunks', push, fail };
    this.safely(() => this.pump());
  }

  /** The chunk reader wants more (Readable's `_read`). */
  more(): void {
    if (this.phase._tag === 'body' && this.phase.reader?._tag === 'chunks') this.safely(() => this.pump());
  }

  /**
   * Drops the body (or the request) in flight, if `request` (its number, `requests` when it was sent) still is,
   * closing the connection; a reader still waiting fails with `cause`.
   */
  abandon(request: number, cause: Error = new Error('the body was dropped')): void {
    if (request !== this.requests) return;
    if (this.phase._tag === 'body' || this.phase._tag === 'head') this.fail(cause);
  }

  /** Closes the connection (an idle one, or one whose reader is done with it). */
  close(): void {
    this.finish();
    this.phase = { _tag: 'closed' };
    this.socketOf?.destroy();
  }

  private safely(step: () => void): void {
    try {
      step();
    } catch (cause) {
      this.fail(cause as Error);
    }
  }

  private nextBuffer(): Uint8Array {
    this.space = undefined;
    if (this.phase._tag === 'head') return this.scratch.subarray(this.headBytes, maxHeadBytes);
    const reader = this.phase._tag === 'body' ? this.phase.reader : undefined;
    const pending = this.pendingTo > this.pendingFrom;
    // Never the body's last byte: that one comes through `scratch`, where the read has room for bytes sent past the
    // body's end too, so that they are seen (an answer nobody asked for) rather than read as the next request's.
    if (reader?._tag === 'direct' && !this.parked && !pending && this.left > 1) {
      const space = reader.sink.space(this.left - 1);
      if (space.byteLength > 0) return (this.space = space);
    }
    if (!pending) return this.scratch.subarray(0, maxHeadBytes);
    // After the bytes pending, never over them: a TLS socket's reads go on for a while after it is paused. Never
    // an empty buffer either (TLS would hand on nothing, forever): `spill` when there is no room.
    return this.pendingTo < this.scratch.byteLength ? this.scratch.subarray(this.pendingTo) : spill;
  }

  /**
   * The socket should go on reading: a body is read and nothing is pending, or the connection is idle, so that
   * bytes or a close that come while it waits for its next request are seen then (see `received`, `ended`).
   */
  private wantsReads(): boolean {
    if (this.phase._tag === 'idle') return true;
    return this.phase._tag === 'body' && !this.parked && this.pendingTo === this.pendingFrom;
  }

  /** The socket read `bytes` into `buffer`; false pauses it. */
  private received(bytes: number, buffer: Uint8Array): boolean {
    try {
      this.sawResponse = true;
      const phase = this.phase;
      if (phase._tag === 'head') {
        // A kept-alive connection's buffer was picked before its request, not always at `headBytes`.
        const at = this.scratch.subarray(this.headBytes);
        if (buffer.buffer !== at.buffer || buffer.byteOffset !== at.byteOffset)
          at.set(buffer.subarray(0, bytes));
        return this.headRead(bytes, phase.answer);
      }
      if (phase._tag !== 'body') throw new MalformedResponse('bytes with no request in flight');
      if (buffer === this.space && phase.reader?._tag === 'direct') {
        this.space = undefined;
        this.left -= bytes;
        const wait = phase.reader.sink.landed(bytes);
        if (this.left === 0) {
          ignoreLastWait(wait);
          this.bodyEnded();
        } else if (wait !== undefined) this.park(wait);
        return this.wantsReads();
      }
      // In `scratch`: right after the bytes pending or, with none, anywhere (see nextBuffer). In `spill` when the
      // buffer was picked with no room left after them: copied in after what is pending now, if that fits.
      let at = buffer.byteOffset - this.scratch.byteOffset;
      if (buffer.buffer !== this.scratch.buffer) {
        at = this.pendingTo > this.pendingFrom ? this.pendingTo : 0;
        if (at + bytes > this.scratch.byteLength)
          throw new Error('no room for the bytes a paused socket read');
        this.scratch.set(buffer.subarray(0, bytes), at);
      }
      if (this.pendingTo === this.pendingFrom) this.pendingFrom = at;
      this.pendingTo = at + bytes;
      this.pump();
      return this.wantsReads();
    } catch (cause) {
      this.fail(cause as Error);
      return false;
    }
  }

  private headRead(bytes: number, answer: Settle<ResponseHead>): boolean {
    this.headBytes += bytes;
    for (;;) {
      const parsed = parseResponseHead(this.scratch.subarray(0, this.headBytes));
      if (parsed === undefined) {
        if (this.headBytes >= maxHeadBytes)
          throw new MalformedResponse(`head longer than ${maxHeadBytes} bytes`);
        return true;
      }
      const { head, bodyStart } = parsed;
      if (head.status === 101) throw new MalformedResponse('101 Switching Protocols to a GET');
      if (head.status >= 200) {
        clearTimeout(this.headTimer);
        this.phase = { _tag: 'body', head, reader: undefined };
        this.begin(head.framing);
        // The body bytes read with the head, moved to the start: reads that still come (TLS) land after them.
        this.scratch.copyWithin(0, bodyStart, this.headBytes);
        this.pendingFrom = 0;
        this.pendingTo = this.headBytes - bodyStart;
        this.socket.setTimeout(this.idleTimeoutMs);
        answer.resolve(head);
        if (this.phase._tag === 'body' && this.bodyLeft() === 0) this.pump();
        // Nothing more is read until the caller picks how to read the body.
        return false;
      }
      // An interim answer (100, 103 Early Hints): dropped, the real one follows.
      this.scratch.copyWithin(0, bodyStart, this.headBytes);
      this.headBytes -= bodyStart;
    }
  }

  private begin(framing: BodyFraming): void {
    this.left = framing._tag === 'length' ? framing.bytes : 0;
    this.decoder = framing._tag === 'chunked' ? new ChunkedDecoder() : undefined;
  }

  /** 0 once nothing of the body is left to read. */
  private bodyLeft(): number {
    if (this.phase._tag !== 'body') return 0;
    const framing = this.phase.head.framing._tag;
    if (framing === 'none') return 0;
    if (framing === 'length') return this.left;
    if (framing === 'chunked') return this.decoder?.done === true ? 0 : 1;
    return 1;
  }

  /** Hands the bytes pending in `scratch` to the reader, until they are all taken or the reader waits. */
  private pump(): void {
    const phase = this.phase;
    if (phase._tag !== 'body' || this.parked) return;
    const reader = phase.reader;
    if (this.bodyLeft() === 0) {
      if (this.pendingTo > this.pendingFrom) throw new MalformedResponse('bytes past the end of the body');
      return this.bodyEnded();
    }
    if (reader === undefined) return;
    if (reader._tag === 'direct') this.pumpDirect(reader.sink);
    else this.pumpChunks(reader.push, phase.head.framing);
    if (this.phase._tag === 'body' && !this.parked && this.pendingTo === this.pendingFrom) this.resume();
  }

  private pumpDirect(sink: ByteSink): void {
    while (this.pendingTo > this.pendingFrom && this.left > 0) {
      const space = sink.space(this.left);
      if (space.byteLength === 0) return this.sinkFull();
      const take = Math.min(space.byteLength, this.pendingTo - this.pendingFrom, this.left);
      space.set(this.scratch.subarray(this.pendingFrom, this.pendingFrom + take));
      this.pendingFrom += take;
      this.left -= take;
      const wait = sink.landed(take);
      if (this.left === 0) {
        ignoreLastWait(wait);
        break;
      }
      if (wait !== undefined) return this.park(wait);
    }
    if (this.left === 0) {
      if (this.pendingTo > this.pendingFrom) throw new MalformedResponse('bytes past the end of the body');
      this.bodyEnded();
    }
  }

  private pumpChunks(push: (chunk: Buffer | null) => boolean, framing: BodyFraming): void {
    const pending = this.scratch.subarray(this.pendingFrom, this.pendingTo);
    this.pendingFrom = this.pendingTo;
    let wantsMore = true;
    if (framing._tag === 'chunked') {
      const used = this.decoder!.push(pending, (data) => (wantsMore = push(Buffer.from(data)) && wantsMore));
      if (used < pending.byteLength) throw new MalformedResponse('bytes past the end of the body');
    } else if (pending.byteLength > 0) {
      const take = framing._tag === 'length' ? Math.min(this.left, pending.byteLength) : pending.byteLength;
      if (take < pending.byteLength) throw new MalformedResponse('bytes past the end of the body');
      this.left -= take;
      wantsMore = push(Buffer.from(pending));
    }
    if (this.bodyLeft() === 0) return this.bodyEnded();
    if (!wantsMore) this.pause();
  }

  /** The reader's sink has no room for the rest of the body: it stopped reading; the rest is never read. */
  private sinkFull(): void {
    const phase = this.phase;
    if (phase._tag !== 'body' || phase.reader?._tag !== 'direct') return;
    const { done } = phase.reader;
    this.close();
    done.resolve(false);
  }

  private park(wait: Promise<void>): void {
    this.parked = true;
    this.socket.setTimeout(0);
    wait.then(
      () => {
        this.parked = false;
        if (this.phase._tag !== 'body') return;
        this.socket.setTimeout(this.idleTimeoutMs);
        this.safely(() => this.pump());
      },
      (cause: unknown) => this.fail(cause instanceof Error ? cause : new Error(String(cause))),
    );
  }

  private bodyEnded(): void {
    const phase = this.phase;
    if (phase._tag !== 'body') return;
    const reader = phase.reader;
    if (reader === undefined) return;
    this.finish();
    const reusable =
      phase.head.reusable && this.pendingTo === this.pendingFrom && this.socketOf?.destroyed === false;
    this.phase = reusable ? { _tag: 'idle' } : { _tag: 'closed' };
    if (reusable) {
      // Idle, it goes on reading (see wantsReads): bytes that come now are no answer, and a close marks it gone.
      this.resume();
      this.owner.free(this);
    } else this.socketOf?.destroy();
    if (reader._tag === 'direct') reader.done.resolve(true);
    else reader.push(null);
  }

  private ended(): void {
    const phase = this.phase;
    if (phase._tag === 'closed') return;
    if (
      phase._tag === 'body' &&
      phase.head.framing._tag === 'until-close' &&
      phase.reader?._tag === 'chunks'
    ) {
      const { push } = phase.reader;
      this.finish();
      this.phase = { _tag: 'closed' };
      push(null);
      return;
    }
    if (phase._tag === 'idle') {
      this.phase = { _tag: 'closed' };
      return;
    }
    this.fail(
      cutShort(
        phase._tag === 'head'
          ? 'socket hang up: the connection closed before a response'
          : `the connection closed with ${phase.head.framing._tag === 'length' ? `${this.left} bytes` : 'part'} of the body unread`,
      ),
    );
  }

  /** Fails whatever is in flight with `cause` and closes the connection. */
  private fail(cause: Error): void {
    const phase = this.phase;
    this.finish();
    this.phase = { _tag: 'closed' };
    this.socketOf?.destroy();
    if (phase._tag === 'head') phase.answer.reject(cause);
    else if (phase._tag === 'body' && phase.reader?._tag === 'direct') phase.reader.done.reject(cause);
    else if (phase._tag === 'body' && phase.reader?._tag === 'chunks') phase.reader.fail(cause);
    else if (phase._tag === 'body') this.unreadFailure = cause;
  }

  private finish(): void {
    clearTimeout(this.headTimer);
    this.stopListening();
    this.stopListening = () => undefined;
    if (this.socketOf?.destroyed === false) this.socketOf.setTimeout(0);
    this.parked = false;
  }

  private pause(): void {
    this.socket.pause();
  }

  private resume(): void {
    if (this.socketOf?.destroyed === false) this.socketOf.resume();
  }
}

/**
 * The wait a sink asks for after the body's last byte: nothing is read after it, so it holds nothing back; a failure
 * it carries (a write) is the sink's to report when its owner finishes with it (BatchWriter's flush), not a rejection
 * nobody hears.
 */
const ignoreLastWait = (wait: Promise<void> | undefined): void => {
  void wait?.catch(() => undefined);
};

/** Where a read lands when `scratch` has no room after the bytes pending; copied out at once (see `received`). */
const spill = Buffer.allocUnsafeSlow(16 * 1024);

const abortError = (signal: AbortSignal): Error => {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
};
