/** FlowingBody: a response body whose chunks a reader takes as they come off the socket, in a flowing Readable's 'data'. */
import { finished, Readable } from 'node:stream';

/** A body `readChunks` takes chunk by chunk as its socket brings them, its failures passed through `failure`. */
export interface FlowingBody extends AsyncIterable<Uint8Array> {
  readonly readable: Readable;
  readonly failure: (cause: unknown) => unknown;
}

/**
 * `body` with each of its failures passed through `failure` (which returns what to throw), whichever way it is
 * read; a Readable stays one for `readChunks`, and is destroyed however reading ends.
 */
export const withFailures = (
  body: AsyncIterable<Uint8Array>,
  failure: (cause: unknown) => unknown,
): AsyncIterable<Uint8Array> => {
  // A FlowingBody wrapped again: its Readable, its own failures passed through `failure` after its own.
  const inner = isFlowing(body) ? body.readable : body;
  const failed = isFlowing(body) ? (cause: unknown) => failure(body.failure(cause)) : failure;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      yield* inner;
    } catch (cause) {
      throw failed(cause);
    } finally {
      if (inner instanceof Readable) inner.destroy();
    }
  }
  if (!(inner instanceof Readable)) return chunks();
  const flowing: FlowingBody = { readable: inner, failure: failed, [Symbol.asyncIterator]: chunks };
  return flowing;
};

const isFlowing = (body: unknown): body is FlowingBody =>
  typeof body === 'object' && body !== null && (body as { readable?: unknown }).readable instanceof Readable;

/**
 * What `take` says of a chunk: undefined, go on; a promise, read nothing more until it settles (a write is under
 * way); false, stop (the rest of the body is never read, its connection closed).
 */
export type ChunkTaken = Promise<void> | undefined | false;

/**
 * Hands each chunk of `body` to `take` until the body ends or `take` says stop; a FlowingBody's as its socket read
 * brought them, in 'data' (no stream buffer, no promise per chunk: see fileWrites). Rejects with the body's failure
 * (through its `failure`) or `take`'s.
 */
export const readChunks = async (
  body: AsyncIterable<Uint8Array>,
  take: (chunk: Uint8Array) => ChunkTaken,
): Promise<void> => {
  if (!isFlowing(body)) {
    for await (const chunk of body) {
      const taken = take(chunk);
      if (taken === false) return;
      await taken;
    }
    return;
  }
  const { readable, failure } = body;
  // The first of: the end, `take`'s stop or failure, the body's failure (a stop's destroy fails it too, unheard).
  let ended: { readonly failed: boolean; readonly cause?: unknown } | undefined;
  try {
    await new Promise<void>((resolve) => {
      const settle = (failed: boolean, cause?: unknown): void => {
        ended ??= { failed, cause };
        resolve();
      };
      finished(readable, (error) => (error ? settle(true, failure(error)) : settle(false)));
      const stop = (failed: boolean, cause?: unknown): void => {
        settle(failed, cause);
        readable.destroy();
      };
      readable.on('data', (chunk: Uint8Array) => {
        let taken: ChunkTaken;
        try {
          taken = take(chunk);
        } catch (cause) {
          return stop(true, cause);
        }
        if (taken === false) return stop(false);
        if (taken === undefined) return;
        readable.pause();
        taken.then(
          () => readable.resume(),
          (cause: unknown) => stop(true, cause),
        );
      });
    });
  } finally {
    readable.destroy();
  }
  if (ended?.failed === true) throw ended.cause;
};
