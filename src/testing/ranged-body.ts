/** rangedBody: an HTTP handler serving a large generated body with ETag and Range/If-Range, and cuts on demand. */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** What the body is and how the server misbehaves. */
export interface RangedBodyOptions {
  /** Bytes in the body. */
  readonly size: number;
  /** The body is this block repeated (cut at `size`); default 64 KiB of a byte pattern. */
  readonly block?: Buffer;
  /** The ETag sent (a quoted string); null sends none. Default `"v1"`. */
  readonly etag?: string | null;
  /** A Last-Modified date to send, if any. */
  readonly lastModified?: string;
  /** false: ignore Range headers and always send the whole body with 200 (a server without range support). */
  readonly ranges?: boolean;
  readonly contentType?: string;
  /** Each answer is sent at most this fast, as a cloud store caps one connection (default: as fast as it drains). */
  readonly bytesPerSecond?: number;
}

/** One request the handler answered. */
export interface RangedRequest {
  readonly method: string | undefined;
  readonly range: string | undefined;
  readonly ifRange: string | undefined;
  readonly status: number;
}

/** The handler, what it was asked, and its switches. */
export interface RangedBody {
  readonly handle: (request: IncomingMessage, response: ServerResponse) => void;
  readonly requests: ReadonlyArray<RangedRequest>;
  /** Body bytes written to clients so far, every request together. */
  readonly sentBytes: () => number;
  /**
   * Closes the connection once the body has been sent up to each of these offsets of the whole body: each offset
   * cuts the first answer whose bytes span it.
   */
  cutAt(...offsets: number[]): void;
  /** From now on the body is another version (new ETag): a resume with the old one gets the whole body. */
  change(etag: string): void;
}

/** The default block of a rangedBody: 64 KiB of a byte pattern. */
export const patternBlock = Buffer.from(
  Array.from({ length: 64 * 1024 }, (_, i) => (i * 7 + (i >> 8)) % 251),
);

/** The bytes `from` (inclusive) to `to` (exclusive) of `block` repeated. */
export const repeatedSlice = (block: Buffer, from: number, to: number): Buffer => {
  const parts: Buffer[] = [];
  for (let at = from; at < to;) {
    const inBlock = at % block.length;
    const take = Math.min(block.length - inBlock, to - at);
    parts.push(block.subarray(inBlock, inBlock + take));
    at += take;
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
};

/** The bytes `[start, end)` a `Range: bytes=<first>-[<last>]` header asks of a body of `size`, when satisfiable. */
const rangeOf = (header: string | undefined, size: number): { start: number; end: number } | undefined => {
  const match = /^bytes=(\d+)-(\d*)$/.exec(header ?? '');
  if (match === null) return undefined;
  const start = Number(match[1]);
  const end = match[2] === '' ? size : Math.min(size, Number(match[2]) + 1);
  return start < end ? { start, end } : undefined;
};

/**
 * Serves `options.size` bytes of a repeated block as fast as the client drains them (or at `bytesPerSecond`),
 * honouring `Range: bytes=n-` and `bytes=n-m` when `If-Range` (if sent) matches the current ETag or Last-Modified, and
 * dropping the connection at the offsets given to `cutAt`: a storage server whose transfers break and resume.
 */
export const rangedBody = (options: RangedBodyOptions): RangedBody => {
  const { size, lastModified } = options;
  const block = options.block ?? patternBlock;
  let etag = options.etag === undefined ? '"v1"' : options.etag;
  const cuts: number[] = [];
  const requests: RangedRequest[] = [];
  let sent = 0;

  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const range = request.headers.range;
    const ifRange = request.headers['if-range'] as string | undefined;
    const validatorMatches = ifRange === undefined || ifRange === etag || ifRange === lastModified;
    const ranged = options.ranges !== false && validatorMatches ? rangeOf(range, size) : undefined;
    const start = ranged?.start ?? 0;
    const stop = ranged?.end ?? size;
    const status = ranged !== undefined ? 206 : 200;
    requests.push({ method: request.method, range, ifRange, status });
    response.writeHead(status, {
      'content-type': options.contentType ?? 'application/octet-stream',
      'content-length': stop - start,
      'accept-ranges': options.ranges === false ? 'none' : 'bytes',
      ...(etag !== null ? { etag } : {}),
      ...(lastModified !== undefined ? { 'last-modified': lastModified } : {}),
      ...(status === 206 ? { 'content-range': `bytes ${start}-${stop - 1}/${size}` } : {}),
    });
    // A HEAD is answered the GET's headers and no body, as servers do.
    if (request.method === 'HEAD') {
      response.end();
      return;
    }
    const cutIndex = cuts.findIndex((offset) => offset > start && offset < stop);
    const cut = cutIndex === -1 ? undefined : cuts.splice(cutIndex, 1)[0];
    const end = cut ?? stop;
    let at = start;
    const answerStarted = performance.now();
    const pump = (): void => {
      while (at < end && !response.destroyed) {
        const dueMs =
          options.bytesPerSecond === undefined ? 0 : ((at - start) / options.bytesPerSecond) * 1000;
        const aheadMs = dueMs - (performance.now() - answerStarted);
        if (aheadMs > 0) {
          setTimeout(pump, aheadMs);
          return;
        }
        const next = Math.min(end, at + block.length);
        const chunk = repeatedSlice(block, at, next);
        sent += chunk.byteLength;
        at = next;
        if (at === end && cut !== undefined) {
          response.write(chunk, () => response.socket?.end());
          return;
        }
        if (!response.write(chunk)) {
          response.once('drain', pump);
          return;
        }
      }
      if (cut === undefined) response.end();
    };
    pump();
  };

  return {
    handle,
    requests,
    sentBytes: () => sent,
    cutAt: (...offsets) => cuts.push(...offsets),
    change: (next) => {
      etag = next;
    },
  };
};
