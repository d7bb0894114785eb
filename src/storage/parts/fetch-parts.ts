/**
 * fetchInParts: one big file fetched as byte ranges over several connections at once, each range written in place
 * with positional writes into one new file and resumed on its own after a cut.
 */
import { setMaxListeners } from 'node:events';
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { retryableError } from '../../core/errors';
import type { Slots } from '../../core/slots';
import { consume, fsError, step } from '../../fs';
import type { TransferGuard } from '../transfer-guard';
import { connectionsFor, partBytesFor, PartPlan, type Part } from './part-plan';

/** The bytes `[start, end)` of the one version of the file the download is pinned to; fails `changed` otherwise. */
export type RangeReader = (
  start: number,
  end: number,
  signal: AbortSignal,
) => Promise<AsyncIterable<Uint8Array>>;

/** One file to fetch in parts. */
export interface PartsJob {
  /** Names the transfer in messages (redacted). */
  readonly what: string;
  readonly size: number;
  /** The new file to create; its parent dir exists. */
  readonly to: string;
  readonly read: RangeReader;
  readonly signal: AbortSignal;
  /** The model's one guard: every byte counted against the cap and the minimum rate. */
  readonly guard: TransferGuard;
  /** The body of a response already open at byte 0 (the first GET): it serves the first range, then is dropped. */
  readonly first?: AsyncIterable<Uint8Array>;
  /** True for a failure a new ranged read may get past (a cut connection, a stall), never for `changed`. */
  readonly resumable: (cause: unknown) => boolean;
}

/** How many connections, from where, and how hard a range is retried. */
export interface PartsSettings {
  /** Most connections this file uses at once (`--download-streams`). */
  readonly streams: number;
  /**
   * The process-wide connections (`--max-download-streams`): the caller holds one for the file already; each further
   * connection waits for one of its own and gives it back when no range is left.
   */
  readonly pool?: Slots;
  /** Resumes of one range in a row that bring no new byte before its failure fails the file (default 3). */
  readonly maxResumes?: number;
  /** Told of each resume of a range, with the offset it starts from (for a log line). */
  readonly onResume?: (offset: number) => void;
}

// Bytes gathered before one positional write: a write per socket read (64 KiB) costs a thread-pool round trip each.
const writeBatchBytes = 2 ** 20;

/** Writes `buffers` whole at `position` (a positional write may write less than asked). */
const writeAt = async (file: FileHandle, buffers: Buffer[], position: number): Promise<void> => {
  let at = position;
  let rest = [...buffers];
  while (rest.length > 0) {
    const { bytesWritten } = await file.writev(rest, at);
    at += bytesWritten;
    let skip = bytesWritten;
    while (rest.length > 0 && skip >= rest[0]!.byteLength) skip -= rest.shift()!.byteLength;
    if (skip > 0) rest = [rest[0]!.subarray(skip), ...rest.slice(1)];
  }
};

/**
 * The bytes of `body` that belong to `part`: from `part.next` up to its end, which shrinks when another connection
 * takes its second half; it stops there, and what the server sent past it is never counted or written.
 */
async function* withinPart(body: AsyncIterable<Uint8Array>, part: Part): AsyncGenerator<Uint8Array> {
  let at = part.next;
  for await (const chunk of body) {
    const room = part.end - at;
    if (room <= 0) return;
    const piece = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
    at += piece.byteLength;
    yield piece;
    if (at >= part.end) return;
  }
}

/**
 * Writes `body` into `part` from `part.next` on, in batches, until the body ends or the part's end; `part.next` is
 * moved only past bytes written, so a cut resumes exactly there. Bytes already received when the body fails are
 * still written. Only the bytes written pass the guard (the cap counts the model, not what a dropped answer sent).
 */
const writePart = async (
  job: PartsJob,
  file: FileHandle,
  part: Part,
  body: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
): Promise<void> => {
  let batch: Buffer[] = [];
  let batched = 0;
  const flush = async (): Promise<void> => {
    if (batched === 0) return;
    const buffers = batch;
    const at = part.next;
    batch = [];
    batched = 0;
    await writeAt(file, buffers, at);
    part.next = at + buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
  };
  await consume(
    job.guard.count(withinPart(body, part)),
    signal,
    async (chunks) => {
      let writeFailed = false;
      try {
        for await (const chunk of chunks) {
          batch.push(chunk);
          batched += chunk.byteLength;
          if (batched >= writeBatchBytes) {
            writeFailed = true;
            await flush();
            writeFailed = false;
          }
        }
      } finally {
        if (!writeFailed) await flush();
      }
    },
    (cause) => fsError(`${job.what}: cannot write ${job.to}`, cause),
  );
};

/** Fetches `part` whole: reads resumed from `part.next` after resumable failures, up to `maxResumes` without progress. */
const fetchPart = async (
  job: PartsJob,
  settings: PartsSettings,
  file: FileHandle,
  part: Part,
  signal: AbortSignal,
  first: AsyncIterable<Uint8Array> | undefined,
): Promise<void> => {
  const maxResumes = settings.maxResumes ?? 3;
  let body = first;
  for (let idle = 0; ;) {
    const before = part.next;
    try {
      await writePart(job, file, part, body ?? (await job.read(part.next, part.end, signal)), signal);
      if (part.next >= part.end) return;
      throw retryableError(
        'network',
        `${job.what}: bytes ${part.start}-${part.end - 1} ended after ${part.next - part.start} bytes`,
      );
    } catch (cause) {
      body = undefined;
      if (signal.aborted || !job.resumable(cause)) throw cause;
      idle = part.next > before ? 0 : idle + 1;
      if (idle > maxResumes) throw cause;
      settings.onResume?.(part.next);
      if (idle > 0) await sleep(100 * idle, undefined, { signal, ref: false });
    }
  }
};

/**
 * Fetches the `job.size` bytes of `job.read` into the new file `job.to` as ranges (partBytesFor) over up to
 * `streams` connections: the caller's, and each further one once the pool grants it. Idle connections take over
 * half of the widest range left (PartPlan), so all end together. The first failure that cannot be resumed stops
 * every range and is thrown (the file is left for the caller's staging dir to delete); `changed` (the version
 * moved) is never resumed, so the next attempt starts whole. Memory: about 1 MiB per connection, whatever the size.
 */
export const fetchInParts = async (job: PartsJob, settings: PartsSettings): Promise<void> => {
  const file = await step(`${job.what}: cannot create ${job.to}`, () => open(job.to, 'wx'));
  const stop = new AbortController();
  const noMoreConnections = new AbortController();
  const signal = AbortSignal.any([job.signal, stop.signal]);
  const poolSignal = AbortSignal.any([signal, noMoreConnections.signal]);
  // Each connection listens on them (its read, its body, its writes): more than Node's warning level of 10.
  setMaxListeners(8 + 4 * settings.streams, signal, poolSignal);
  const partBytes = partBytesFor(job.size, settings.streams);
  const plan = new PartPlan(job.size, partBytes);
  const connections = connectionsFor(job.size, partBytes, settings.streams);
  let failure: { cause: unknown } | undefined;
  const connection = async (first?: AsyncIterable<Uint8Array>): Promise<void> => {
    try {
      for (let part = plan.take(); part !== undefined && failure === undefined; part = plan.take()) {
        await fetchPart(job, settings, file, part, signal, first);
        first = undefined;
        plan.finished(part);
      }
    } catch (cause) {
      failure ??= { cause };
      stop.abort();
    }
  };
  try {
    // Started first, so the response already open at byte 0 gets the range that starts there.
    const leader = connection(job.first);
    const further = Array.from({ length: connections - 1 }, () =>
      settings.pool === undefined
        ? connection()
        : // A wait the file no longer needs (every range taken) or that the stop ended is no failure.
          settings.pool.use(poolSignal, () => connection()).catch(() => undefined),
    );
    await leader;
    noMoreConnections.abort();
    await Promise.all(further);
  } finally {
    noMoreConnections.abort();
    await file.close();
  }
  if (job.signal.aborted) throw job.signal.reason;
  if (failure !== undefined) throw failure.cause;
};
