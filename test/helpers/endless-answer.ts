/**
 * endlessAnswer: a store answer whose body never ends (or trickles), written with backpressure so that the bytes it
 * counts are the bytes the client's side took: what a client that stops reading in time can have been sent.
 */
import type { ServerResponse } from 'node:http';

/** How the endless body looks and comes. */
export interface EndlessBody {
  /** Status and headers; without a Content-Length the body is chunked, unless `closes`. */
  readonly status?: number;
  readonly headers: Readonly<Record<string, string | number>>;
  /** No length and no chunks: the body ends when the connection closes. */
  readonly closes?: boolean;
  /** Sent first (the start of a page: `<ListBucketResult>`, `{"items":[`). */
  readonly head: string;
  /** Sent over and over after it (one listed item). */
  readonly filler: string;
  /** A pause between fillers, in ms (a trickle); absent: as fast as the client takes them. */
  readonly everyMs?: number;
  /** The most bytes it ever sends (so a client that never stops fails the test, not the machine). */
  readonly limit?: number;
}

/** One answer going out: the bytes handed to the socket so far, and whether the client went away. */
export interface EndlessRun {
  readonly served: () => number;
  readonly closed: Promise<void>;
}

/**
 * What a loopback connection can hold in flight beyond what its client read: the sender's and the receiver's socket
 * buffers (Linux grows them to 4 and 6 MiB) and the client's own stream buffers. A client that stops reading in time
 * has been sent at most what it read and this.
 */
export const socketsHold = 16 * 2 ** 20;

const batchBytes = 64 * 1024;

/**
 * Answers `response` with `body`: its head, then its filler again and again (batched to 64 KiB when there is no
 * pause), each batch written only once the one before was taken (`drain`), counted once written. Stops when the
 * client goes away or at `body.limit` (default 48 MiB: past any cap plus what sockets hold).
 */
export const sendEndless = (response: ServerResponse, body: EndlessBody): EndlessRun => {
  const limit = body.limit ?? 48 * 2 ** 20;
  const batch =
    body.everyMs === undefined
      ? Buffer.from(body.filler.repeat(Math.max(1, Math.floor(batchBytes / body.filler.length))))
      : Buffer.from(body.filler);
  let served = 0;
  let gone = false;
  const closed = new Promise<void>((resolve) => response.on('close', resolve));
  void closed.then(() => (gone = true));
  if (body.closes === true) {
    // Neither Content-Length nor chunks: node then writes the body as it is and closes the connection after it.
    response.useChunkedEncodingByDefault = false;
    response.shouldKeepAlive = false;
  }
  response.writeHead(body.status ?? 200, body.headers);
  const write = (chunk: Buffer): Promise<boolean> =>
    new Promise((resolve) => {
      if (gone) return resolve(false);
      const drained = response.write(chunk, (error) => {
        if (error === null || error === undefined) served += chunk.length;
      });
      if (drained) return resolve(true);
      const onDrain = (): void => {
        response.off('close', onClose);
        resolve(true);
      };
      const onClose = (): void => {
        response.off('drain', onDrain);
        resolve(false);
      };
      response.once('drain', onDrain);
      response.once('close', onClose);
    });
  void (async () => {
    if (!(await write(Buffer.from(body.head)))) return;
    while (served + batch.length <= limit && (await write(batch))) {
      if (body.everyMs !== undefined) await new Promise((resolve) => setTimeout(resolve, body.everyMs));
    }
    response.end();
  })();
  return { served: () => served, closed };
};
