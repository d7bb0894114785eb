/**
 * fetchInParts: one big file fetched as byte ranges over several connections at once, each range written in place
 * with positional writes into one new file and resumed on its own after a cut.
 */
import { setMaxListeners } from 'node:events';
import { open, type FileHandle } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { retryableError } from '../../core/errors';
import type { Slots } from '../../core/slots';
import { fsError, step } from '../../fs';
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

/** Writes `length` bytes of `buffer` whole at `position` (a positional write may write less than asked). */
const writeAt = async (file: FileHandle, buffer: Buffer, length: number, position: number): Promise<void> => {
  for (let done = 0; done < length;) {
    const { bytesWritten } = await file.write(buffer, done, length - done, position + done);
    done += bytesWritten;
  }
};

/**
 * Writes `body` into `part` from `part.next` on until the body ends or the part's end (which shrinks when another
 * connection takes its second half: what the server sent past it is never counted or written); `part.next` is moved
 * only past bytes written, so a cut resumes exactly there, and bytes received before the body failed are still
 * written. Each chunk is copied into the connection's own `batch` buffer and written from there 1 MiB at a time:
 * the socket's chunk dies young (held for a batch, every chunk would outlive the young generation and wait for a
 * full collection), and one loop with no generator per chunk keeps the CPU for the bytes (measured: the GC took
 * 1.4 s of a 1 GiB download through generator layers and held chunks). Only the bytes written pass the guard.
 */
const writePart = async (
  job: PartsJob,
  file: FileHandle,
  part: Part,
  body: AsyncIterable<Uint8Array>,
  batch: Buffer,
): Promise<void> => {
  let filled = 0;
  let writeFailed = false;
  const flush = async (): Promise<void> => {
    if (filled === 0) return;
    const at = part.next;
    writeFailed = true;
    await writeAt(file, batch, filled, at).catch((cause: unknown) => {
      throw fsError(`${job.what}: cannot write ${job.to}`, cause);
    });
    writeFailed = false;
    part.next = at + filled;
    filled = 0;
  };
  const stopReading = job.guard.reading();
  try {
    let at = part.next;
    for await (const chunk of body) {
      const take = Math.min(chunk.byteLength, part.end - at);
      if (take <= 0) break;
      job.guard.received(take);
      at += take;
      for (let copied = 0; copied < take;) {
        const n = Math.min(take - copied, batch.byteLength - filled);
        batch.set(chunk.subarray(copied, copied + n), filled);
        filled += n;
        copied += n;
        if (filled === batch.byteLength) await flush();
      }
      // No break at the part's end: an answer of exactly these bytes ends by itself and keeps its connection alive
      // for the next range; only one that runs past it (the first GET's, a split range's) is dropped.
    }
  } finally {
    stopReading();
    if (!writeFailed) await flush();
  }
};

/** Fetches `part` whole: reads resumed from `part.next` after resumable failures, up to `maxResumes` without progress. */
const fetchPart = async (
  job: PartsJob,
  settings: PartsSettings,
  file: FileHandle,
  part: Part,
  signal: AbortSignal,
  first: AsyncIterable<Uint8Array> | undefined,
  batch: Buffer,
): Promise<void> => {
  const maxResumes = settings.maxResumes ?? 3;
  let body = first;
  for (let idle = 0; ;) {
    const before = part.next;
    try {
      await writePart(job, file, part, body ?? (await job.read(part.next, part.end, signal)), batch);
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
    // One buffer per connection for all its ranges: allocated outside V8's heap pool, reused for every batch.
    const batch = Buffer.allocUnsafeSlow(writeBatchBytes);
    try {
      for (let part = plan.take(); part !== undefined && failure === undefined; part = plan.take()) {
        await fetchPart(job, settings, file, part, signal, first, batch);
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
