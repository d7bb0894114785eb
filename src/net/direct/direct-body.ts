/** DirectBody: a direct response's body, a Readable for any reader and `readInto` for one with buffers of its own. */
import { Readable } from 'node:stream';
import type { ByteSink } from './byte-sink';
import type { DirectConnection } from './direct-connection';

/** A body read by a stream of chunks past `maxBytes` (an error page, say) fails with this. */
export class BodyTooLarge extends Error {
  readonly code = 'MODELSYNC_BODY_TOO_LARGE';
  constructor(maxBytes: number) {
    super(`response body longer than ${maxBytes} bytes`);
  }
}

/** A body a reader may take straight into its own memory (`direct`), or as a stream of chunks. */
export interface SinkReadable extends AsyncIterable<Uint8Array> {
  /** True while `readInto` can take the body. */
  readonly direct: boolean;
  /** See DirectBody.readInto. */
  readInto(sink: ByteSink): Promise<boolean>;
}

/** True for a body that can be read into a sink (a DirectBody, or one wrapped by `withFailures`). */
export const isSinkReadable = (body: unknown): body is SinkReadable =>
  typeof body === 'object' &&
  body !== null &&
  typeof (body as { readInto?: unknown }).readInto === 'function' &&
  (body as { direct?: unknown }).direct === true;

/**
 * `body`, whichever way it is read, with each failure passed through `failure` (which returns what to throw):
 * what a caller's own classification of a body's failures (a lost connection, a store's error) needs to keep
 * when the body is read into a sink.
 */
export const withFailures = (body: SinkReadable, failure: (cause: unknown) => unknown): SinkReadable => ({
  get direct() {
    return body.direct;
  },
  readInto: async (sink) => {
    try {
      return await body.readInto(sink);
    } catch (cause) {
      throw failure(cause);
    }
  },
  async *[Symbol.asyncIterator]() {
    try {
      yield* body;
    } catch (cause) {
      throw failure(cause);
    }
  },
});

/**
 * The body of one response on a DirectConnection. Read as a stream (a Readable: `for await`, an SDK's collector)
 * it comes as copied chunks, at most `maxStreamBytes` of them; read with `readInto` (when `direct`), it goes
 * straight from the socket into the sink's memory. Destroying it before its end closes the connection.
 */
export class DirectBody extends Readable implements SinkReadable {
  private streamed = 0;
  private started = false;
  private readonly request: number;

  constructor(
    private readonly connection: DirectConnection,
    private readonly maxStreamBytes = Number.POSITIVE_INFINITY,
  ) {
    super();
    this.request = connection.requests;
  }

  /** True when `readInto` can take this body: framed by its length, and not read yet. */
  get direct(): boolean {
    return !this.started && this.connection.directFraming;
  }

  /**
   * Reads the body into `sink` until it ends (true) or the sink has no room left for what is still to come (false:
   * the rest is never read and the connection is closed). Rejects on a lost connection, a stall, an abort.
   */
  async readInto(sink: ByteSink): Promise<boolean> {
    this.started = true;
    try {
      return await this.connection.readInto(sink);
    } finally {
      this.destroy();
    }
  }

  /** Drops what is left of the body: its connection is closed unless the body was read whole. */
  dump(): Promise<void> {
    this.destroy();
    return Promise.resolve();
  }

  override _read(): void {
    if (this.started) return this.connection.more();
    this.started = true;
    this.connection.readChunks(
      (chunk) => {
        if (chunk === null) return this.push(null);
        this.streamed += chunk.byteLength;
        if (this.streamed > this.maxStreamBytes) {
          this.destroy(new BodyTooLarge(this.maxStreamBytes));
          return false;
        }
        return this.push(chunk);
      },
      (cause) => this.destroy(cause),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.connection.abandon(this.request, error ?? undefined);
    callback(error);
  }
}
