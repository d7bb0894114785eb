/** idleChunks: a body's chunks with a deadline on each wait for the next, for clients whose SDK has none that works. */
import { timeoutOf, transportError } from '../../net';

/**
 * The chunks of `body` (a Node stream) with a deadline of `ms` on each wait for the next; the time the consumer
 * spends between chunks (writing to disk) does not count. On expiry the body is destroyed and the read fails as
 * a timeout of `what`, the same way whichever timer fired first; any other failure is `failure(cause)`. The body
 * (and its connection) ends however the reading ends.
 */
export const idleChunks = (...args: Parameters<typeof watched>): AsyncIterable<Uint8Array> => {
  // A read hands its body out before anyone iterates it (the consumer opens its file first): a cut meanwhile is
  // kept by the stream, which its iterator throws at the first read; until then this listener keeps it from being
  // an uncaught 'error' event, which would end the process.
  args[0].on('error', () => undefined);
  return watched(...args);
};

async function* watched(
  body: NodeJS.ReadableStream,
  ms: number,
  what: string,
  signal: AbortSignal,
  failure: (cause: unknown) => unknown,
): AsyncGenerator<Uint8Array> {
  let fired = false;
  const chunks = body[Symbol.asyncIterator]();
  const next = async () => {
    const timer = setTimeout(() => {
      fired = true;
      (body as { destroy?: () => void }).destroy?.();
    }, ms);
    try {
      return await chunks.next();
    } finally {
      clearTimeout(timer);
    }
  };
  try {
    for (let chunk = await next(); chunk.done !== true; chunk = await next()) yield chunk.value as Buffer;
  } catch (cause) {
    const stalled = fired || timeoutOf(cause) !== undefined;
    throw stalled && !signal.aborted
      ? transportError(cause, { what, aborted: false, timeout: `timed out: no data received for ${ms} ms` })
      : failure(cause);
  } finally {
    // Its errors were the iterator's to report.
    await chunks.return?.().catch(() => undefined);
  }
}
