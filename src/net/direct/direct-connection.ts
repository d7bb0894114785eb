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
import type { ByteSink } from './byte-sink';
import { BodyFrame } from './body-frame';
import { abortError, cutShort, DirectTimeout } from './direct-errors';
import { MalformedResponse, maxHeadBytes, parseResponseHead, type ResponseHead } from './response-head';
import { ScratchBytes } from './scratch-bytes';

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
  | {
      readonly _tag: 'body';
      readonly head: ResponseHead;
      readonly body: BodyFrame;
      reader: Reader | undefined;
    }
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
  /** The head's bytes, and every read no sink takes (chunks, bytes after a pause). */
  private readonly scratch = new ScratchBytes();
  private phase: Phase = { _tag: 'idle' };
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
    this.scratch.startHead();
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
    const phase = this.phase;
    if (phase._tag === 'head') return this.scratch.headSpace();
    // Never the body's last byte: that one comes through the scratch, where the read has room for bytes sent past the
    // body's end too, so that they are seen (an answer nobody asked for) rather than read as the next request's.
    if (
      phase._tag === 'body' &&
      phase.reader?._tag === 'direct' &&
      !this.parked &&
      this.scratch.pending === 0 &&
      phase.body.left > 1
    ) {
      const space = phase.reader.sink.space(phase.body.left - 1);
      if (space.byteLength > 0) return (this.space = space);
    }
    return this.scratch.readSpace();
  }

  /**
   * The socket should go on reading: a body is read and nothing is pending, or the connection is idle, so that
   * bytes or a close that come while it waits for its next request are seen then (see `received`, `ended`).
   */
  private wantsReads(): boolean {
    if (this.phase._tag === 'idle') return true;
    return this.phase._tag === 'body' && !this.parked && this.scratch.pending === 0;
  }

  /** The socket read `bytes` into `buffer`; false pauses it. */
  private received(bytes: number, buffer: Uint8Array): boolean {
    try {
      this.sawResponse = true;
      const phase = this.phase;
      if (phase._tag === 'head') return this.headRead(this.scratch.headLanded(buffer, bytes), phase.answer);
      if (phase._tag !== 'body') throw new MalformedResponse('bytes with no request in flight');
      if (buffer === this.space && phase.reader?._tag === 'direct') {
        this.space = undefined;
        const step = phase.body.landed(phase.reader.sink, bytes);
        if (step._tag === 'ended') this.bodyEnded();
        else if (step._tag === 'wait') this.park(step.wait);
        return this.wantsReads();
      }
      this.scratch.bodyLanded(buffer, bytes);
      this.pump();
      return this.wantsReads();
    } catch (cause) {
      this.fail(cause as Error);
      return false;
    }
  }

  private headRead(head: Uint8Array, answer: Settle<ResponseHead>): boolean {
    for (;;) {
      const parsed = parseResponseHead(head);
      if (parsed === undefined) {
        if (head.byteLength >= maxHeadBytes)
          throw new MalformedResponse(`head longer than ${maxHeadBytes} bytes`);
        return true;
      }
      const { head: answered, bodyStart } = parsed;
      if (answered.status === 101) throw new MalformedResponse('101 Switching Protocols to a GET');
      if (answered.status >= 200) {
        clearTimeout(this.headTimer);
        this.phase = {
          _tag: 'body',
          head: answered,
          body: new BodyFrame(answered.framing),
          reader: undefined,
        };
        // The body bytes read with the head, moved to the start: reads that still come (TLS) land after them.
        this.scratch.startBody(bodyStart);
        this.socket.setTimeout(this.idleTimeoutMs);
        answer.resolve(answered);
        if (this.phase._tag === 'body' && this.phase.body.done) this.pump();
        // Nothing more is read until the caller picks how to read the body.
        return false;
      }
      // An interim answer (100, 103 Early Hints): dropped, the real one follows.
      this.scratch.dropInterim(bodyStart);
      head = head.subarray(0, head.byteLength - bodyStart);
    }
  }

  /** Hands the bytes pending in the scratch to the reader, until they are all taken or the reader waits. */
  private pump(): void {
    const phase = this.phase;
    if (phase._tag !== 'body' || this.parked) return;
    const { body, reader } = phase;
    if (body.done) {
      if (this.scratch.pending > 0) throw new MalformedResponse('bytes past the end of the body');
      return this.bodyEnded();
    }
    if (reader === undefined) return;
    if (reader._tag === 'direct') {
      const step = body.toSink(this.scratch, reader.sink);
      if (step._tag === 'full') return this.sinkFull();
      if (step._tag === 'wait') return this.park(step.wait);
      if (step._tag === 'ended') return this.bodyEnded();
    } else {
      const wantsMore = body.toChunks(this.scratch, reader.push);
      if (body.done) return this.bodyEnded();
      // The reader's stream is full: nothing more is read until it asks (`more`).
      if (!wantsMore) return this.pause();
    }
    if (this.phase._tag === 'body' && !this.parked && this.scratch.pending === 0) this.resume();
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
    const reusable = phase.head.reusable && this.scratch.pending === 0 && this.socketOf?.destroyed === false;
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
          : `the connection closed with ${phase.head.framing._tag === 'length' ? `${phase.body.left} bytes` : 'part'} of the body unread`,
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
