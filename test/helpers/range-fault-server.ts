/** A server of one big file that plays one of the range faults to every ranged request, or only to the first. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpHandler } from '../../src/testing/http-server';
import { rangedBody } from '../../src/testing/ranged-body';
import type { RangeFault } from './range-faults';

/** The range a `Range: bytes=<first>-[<last>]` header asks for. */
const askedRange = (header: string, size: number): { start: number; end: number } | undefined => {
  const match = /^bytes=(\d+)-(\d*)$/.exec(header);
  if (match === null) return undefined;
  const start = Number(match[1]);
  return { start, end: match[2] === '' ? size : Math.min(size, Number(match[2]) + 1) };
};

/** How a fault server plays its fault. */
export interface FaultServerOptions {
  readonly fault: RangeFault;
  /** `every`: to every ranged request; `first`: to the first only, the rest answered well. */
  readonly when: 'every' | 'first';
  /** The first GET's bytes per second: slow enough that the download opens ranged reads beside it. */
  readonly firstGetBytesPerSecond: number;
}

/** What a fault server was asked. */
export interface FaultServerLog {
  ranged: number;
  faulted: number;
}

/**
 * A handler serving `file` (ETag `"v1"`, ranges) whose ranged answers play `options.fault`; the plain GET that
 * starts a download is answered well, at `firstGetBytesPerSecond`. `origin` is the server's base URL (for redirects).
 */
export const faultServer = (
  file: Buffer,
  options: FaultServerOptions,
  origin: () => string,
): { readonly handle: HttpHandler; readonly log: FaultServerLog } => {
  const etag = '"v1"';
  const block = file;
  const slow = rangedBody({ size: file.length, block, etag, bytesPerSecond: options.firstGetBytesPerSecond });
  const well = rangedBody({ size: file.length, block, etag });
  const log: FaultServerLog = { ranged: 0, faulted: 0 };
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const range =
      request.headers.range === undefined ? undefined : askedRange(request.headers.range, file.length);
    if (range === undefined) return slow.handle(request, response);
    log.ranged += 1;
    if (options.when === 'first' && log.faulted > 0) return well.handle(request, response);
    log.faulted += 1;
    const socket = response.socket!;
    const bytes = (from: number, to: number): Buffer => file.subarray(from, to);
    options.fault.play(socket, { ...range, size: file.length, etag, bytes, origin: origin() });
  };
  return { handle, log };
};
