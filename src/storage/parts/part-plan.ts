/**
 * PartPlan: how one big file is cut into byte ranges fetched over several connections, and how an idle connection
 * takes over half of the slowest range at the end (as aria2 splits), so no connection waits while one finishes.
 */

const mebibyte = 2 ** 20;

/** Files smaller than this are fetched as one stream: a second connection costs more than it brings. */
export const rangedThresholdBytes = 32 * mebibyte;

/** The smallest range cut up front. */
const minPartBytes = 4 * mebibyte;

/** A range is never split below this: the request that fetches it would cost more than it saves. */
const minStealBytes = 4 * mebibyte;

/**
 * The size of the ranges a file of `size` bytes is cut into for `streams` connections: about two per connection,
 * 4 to 64 MiB in whole MiB, never so big that a connection starts with no range of its own (it would split one just
 * asked for, wasting what was sent past the split). Not more: each range waits for its first byte, a wait the others
 * cannot make up on a full link (1 GiB over 8 connections: 4.14-4.89 s with four ranges each, 3.72-4.09 s with two);
 * idle connections splitting a slow one's range (`take`) make up for it.
 */
export const partBytesFor = (size: number, streams: number): number => {
  const inMebibytes = (bytes: number): number => Math.ceil(bytes / mebibyte) * mebibyte;
  const half = Math.min(64 * mebibyte, Math.max(minPartBytes, inMebibytes(size / (streams * 2))));
  return Math.max(minPartBytes, Math.min(half, Math.floor(size / streams / mebibyte) * mebibyte));
};

/** The connections worth opening for a file of `size` in ranges of `partBytes`: no more than there are ranges. */
export const connectionsFor = (size: number, partBytes: number, streams: number): number =>
  Math.max(1, Math.min(streams, Math.ceil(size / partBytes)));

/** One range of the file: `[start, end)`. `next` is how far it is written; `end` may shrink when it is split. */
export interface Part {
  readonly start: number;
  next: number;
  end: number;
}

/** The ranges of one file still to fetch, handed to connections one at a time. */
export class PartPlan {
  private readonly queued: Part[] = [];
  private readonly active = new Set<Part>();

  /** Cuts `[0, size)` into ranges of `partBytes`. */
  constructor(size: number, partBytes: number) {
    for (let start = 0; start < size; start += partBytes) {
      this.queued.push({ start, next: start, end: Math.min(size, start + partBytes) });
    }
  }

  /**
   * The next range for an idle connection: a queued one, else the second half of the active range with the most
   * bytes left (its owner stops at the new end), else none: every byte is fetched or being fetched.
   */
  take(): Part | undefined {
    const queued = this.queued.shift();
    if (queued !== undefined) return this.started(queued);
    let widest: Part | undefined;
    for (const part of this.active) {
      if (widest === undefined || part.end - part.next > widest.end - widest.next) widest = part;
    }
    if (widest === undefined || widest.end - widest.next < 2 * minStealBytes) return undefined;
    const middle = widest.next + Math.ceil((widest.end - widest.next) / 2 / mebibyte) * mebibyte;
    if (middle >= widest.end) return undefined;
    const stolen = { start: middle, next: middle, end: widest.end };
    widest.end = middle;
    return this.started(stolen);
  }

  /**
   * The one range being fetched takes every range still queued, so its connection, working alone, fetches the rest
   * in one read; with no such one range (it is between two), it goes on range by range.
   */
  extendToEnd(): void {
    const [part, ...others] = this.active;
    const last = this.queued[this.queued.length - 1];
    if (part === undefined || others.length > 0 || last === undefined || this.queued[0]!.start !== part.end)
      return;
    part.end = last.end;
    this.queued.length = 0;
  }

  /** `part` is written whole: it is no longer split. */
  finished(part: Part): void {
    this.active.delete(part);
  }

  /** Its connection closes before `part` is written whole: what is left of it is queued first, for another. */
  giveBack(part: Part): void {
    this.active.delete(part);
    if (part.next < part.end) this.queued.unshift({ start: part.next, next: part.next, end: part.end });
  }

  private started(part: Part): Part {
    this.active.add(part);
    return part;
  }
}
