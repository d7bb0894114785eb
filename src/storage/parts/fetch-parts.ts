/**
 * fetchInParts: one big file fetched as byte ranges over several connections at once, each range written in place
 * with positional writes into one new file and resumed on its own after a cut.
 */
import { setMaxListeners } from 'node:events';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { retryableError } from '../../core/errors';
import { inSlot, type Slots } from '../../core/slots';
import { fsError, onRemoteFileSystem, step } from '../../fs';
import { readChunks } from '../../net';
import type { TransferGuard } from '../transfer-guard';
import { BatchWriter } from './batch-writer';
import { defaultInlineLimits, fileWrites, type FileWrites } from './file-writes';
import { connectionsFor, partBytesFor, PartPlan, type Part } from './part-plan';
import { defaultOneStreamRule, leaderIsEnough, type OneStreamRule } from './one-stream';
import { isPushback, type StorePressure } from '../store-pressure';

/** The bytes `[start, end)` of the one version of the file the download is pinned to; fails `changed` otherwise. */
export type RangeReader = (
  start: number,
  end: number,
  signal: AbortSignal,
) => Promise<AsyncIterable<Uint8Array>>;

/** A ranged body's failure whose bytes are read again, not kept: unframed by its length, they may not be data. */
export class UntrustedBytes extends Error {
  constructor(cause: unknown) {
    super('an answer not framed by its length broke off', { cause });
  }
}

/**
 * `failure` as a ranged read's body failure: marked UntrustedBytes when the answer was not framed by its length
 * (chunked, say), where a chunk size no server sends may have passed other bytes as data.
 */
export const rangedFailure = (framed: boolean, failure: unknown): unknown =>
  framed ? failure : new UntrustedBytes(failure);

/** The failure under an UntrustedBytes mark, or `cause` itself. */
export const trustedCause = (cause: unknown): unknown =>
  cause instanceof UntrustedBytes ? cause.cause : cause;

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
  /** The process-wide connections (`--max-download-streams`): the caller holds the file's first one. */
  readonly pool?: Slots;
  /** Resumes of one range in a row that bring less than 1 MiB (progressBytes) before the file fails (default 3). */
  readonly maxResumes?: number;
  /** When the first connection alone fetches the whole file (default `defaultOneStreamRule`; null: never). */
  readonly oneStream?: OneStreamRule | null;
  /** The clock of the one-stream rule's window, in ms (default `performance.now`): a test steps its own. */
  readonly now?: () => number;
  /** The store's push-back state: each ranged read asks through it, and a connection it crowds out closes. */
  readonly pressure?: StorePressure | undefined;
}

/**
 * Each of a connection's two buffers, where small chunks are gathered into one write. 512 KiB cost more CPU in the
 * page cache's copy (1.07-1.21 CPU-s per GiB against 0.84-0.97) and more RSS (issue 28). Two stay below the smallest
 * range split off (4 MiB), so no byte buffered past a split is ever written.
 */
const batchBytes = 2 ** 17;

// What a read must bring to count as progress: a peer cutting every answer after a few bytes fails the file.
const progressBytes = 2 ** 20;

/** What the ranges one connection fetches share: its two buffers; the file, its writes and the bytes written. */
interface Connection {
  readonly job: PartsJob;
  readonly maxResumes: number;
  readonly file: FileWrites;
  readonly signal: AbortSignal;
  readonly buffers: readonly [Buffer, Buffer];
  readonly written: { bytes: number };
  readonly pressure: StorePressure | undefined;
  /**
   * After a push-back: true when the connection closes to ease the store, `part` given back to the plan at once (the
   * store is crowded and another connection of the file goes on).
   */
  readonly leaves: (part: Part) => boolean;
}

/**
 * Reads `body` into `part` from `part.next` until the body or the part ends (the end shrinks when another connection
 * takes its second half). `part.next` moves only past bytes written, so a cut resumes exactly there; only those
 * bytes pass the guard. No generator per chunk (readChunks).
 */
const writePart = async (
  { job, file, buffers, written }: Connection,
  part: Part,
  body: AsyncIterable<Uint8Array>,
  askedEnd: number,
): Promise<void> => {
  const writer = new BatchWriter(
    file,
    buffers,
    part.next,
    (end) => {
      written.bytes += end - part.next;
      part.next = end;
    },
    (cause) => fsError(`${job.what}: cannot write ${job.to}`, cause),
  );
  const stopReading = job.guard.reading();
  let at = part.next;
  try {
    // No stop at the part's end: an exact answer ends by itself and keeps its connection alive for the next range.
    await readChunks(body, (chunk) => {
      // Never past what was asked, though the part grew since (extendToEnd): a 206 that runs on is not the file's.
      const take = Math.min(chunk.byteLength, Math.min(part.end, askedEnd) - at);
      if (take <= 0) return false;
      job.guard.received(take);
      at += take;
      return writer.add(take === chunk.byteLength ? chunk : chunk.subarray(0, take));
    });
  } finally {
    stopReading();
    await writer.flush();
  }
};

/** A ranged read of `part` as it is now, through the store's push-back state when there is one. */
const readPart = ({ job, signal, pressure }: Connection, part: Part): Promise<AsyncIterable<Uint8Array>> => {
  const read = (): Promise<AsyncIterable<Uint8Array>> => job.read(part.next, part.end, signal);
  return pressure === undefined ? read() : pressure.ask(signal, read);
};

/**
 * Fetches `part` whole, resumed from `part.next` up to `maxResumes` times in a row that bring little; a push-back
 * waits out the store's pause instead (up to `maxPushbacks` in a row), or closes the connection (`leaves`).
 * Resolves to `left` when it did, `done` when the part is written whole.
 */
const fetchPart = async (
  connection: Connection,
  part: Part,
  first: AsyncIterable<Uint8Array> | undefined,
): Promise<'done' | 'left'> => {
  const { job, signal, maxResumes } = connection;
  let body = first;
  for (let idle = 0, pushbacks = 0; ;) {
    const before = part.next;
    // The first GET's body runs to the file's end; a ranged read to the part's end as it is now.
    const askedEnd = body === undefined ? part.end : job.size;
    try {
      await writePart(connection, part, body ?? (await readPart(connection, part)), askedEnd);
      if (part.next >= part.end) return 'done';
      // The part grew while it was read (extendToEnd): no failure, the next read asks for the rest.
      if (part.next >= askedEnd) {
        body = undefined;
        continue;
      }
      throw retryableError(
        'network',
        `${job.what}: bytes ${part.start}-${part.end - 1} ended after ${part.next - part.start} bytes`,
      );
    } catch (caught) {
      body = undefined;
      // An unframed answer's bytes are read again from where this read began; its own failure decides and is told.
      if (caught instanceof UntrustedBytes) part.next = before;
      const cause = trustedCause(caught);
      if (signal.aborted || !job.resumable(cause)) throw cause;
      // The store pushed back: its pause is waited out at the next read (StorePressure.ask), never a tight retry.
      if (connection.pressure !== undefined && isPushback(cause)) {
        if (++pushbacks > connection.pressure.maxPushbacks) throw cause;
        if (connection.leaves(part)) return 'left';
        continue;
      }
      pushbacks = 0;
      idle = part.next - before >= progressBytes ? 0 : idle + 1;
      if (idle > maxResumes) throw cause;
      // A ref'd wait, as every wait of a download: it is the work (an unref'd one let the initializer exit 0 mid-way).
      if (idle > 0) await sleep(100 * idle, undefined, { signal });
    }
  }
};

/**
 * Fetches the `job.size` bytes of `job.read` into the new file `job.to` as ranges (partBytesFor) over up to `streams`
 * connections: the caller's, and each further one once the pool grants it; idle ones take over half of the widest
 * range left (PartPlan). The first failure that cannot be resumed stops every range and is thrown (the staging dir
 * deletes the file); `changed` is never resumed. Memory: two buffers per connection, whatever the size.
 */
export const fetchInParts = async (job: PartsJob, settings: PartsSettings): Promise<void> => {
  const [file, remote] = await Promise.all([
    step(`${job.what}: cannot create ${job.to}`, () => open(job.to, 'wx')),
    onRemoteFileSystem(dirname(job.to)),
  ]);
  // On NFS or FUSE one write may wait for its server for good: there it must hold a pool thread, not the event loop.
  const writes = fileWrites(file, remote ? null : defaultInlineLimits);
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
  // Bytes written by every connection: while the first works alone, what it brought.
  const written = { bytes: 0 };
  const maxResumes = settings.maxResumes ?? 3;
  const { pressure } = settings;
  // The file's connections at work now: one that a push-back crowds out closes only while another goes on.
  let live = 0;
  const leaves = (part: Part): boolean => {
    if (pressure?.crowded !== true || live < 2) return false;
    plan.giveBack(part); // at once, in the turn that decided: the others take it at their next range
    return true;
  };
  const connection = async (first?: AsyncIterable<Uint8Array>): Promise<void> => {
    // Two buffers per connection for all its ranges: allocated outside V8's heap pool, reused for every batch.
    const buffers = [Buffer.allocUnsafeSlow(batchBytes), Buffer.allocUnsafeSlow(batchBytes)] as const;
    const shared = { job, maxResumes, file: writes, signal, buffers, written, pressure, leaves };
    live++;
    const closed = pressure?.open();
    try {
      for (let part = plan.take(); part !== undefined && failure === undefined; part = plan.take()) {
        const outcome = await fetchPart(shared, part, first);
        first = undefined;
        if (outcome === 'left') return;
        plan.finished(part);
      }
    } catch (cause) {
      failure ??= { cause };
      stop.abort();
    } finally {
      live--;
      closed?.();
    }
  };
  try {
    // Started first, so the response already open at byte 0 gets the range that starts there.
    const leader = connection(job.first);
    const rule = settings.oneStream !== undefined ? settings.oneStream : defaultOneStreamRule;
    const oneIsEnough =
      connections > 1 &&
      rule !== null &&
      (await leaderIsEnough(leader, written, rule, signal, settings.now ?? (() => performance.now())));
    if (oneIsEnough) plan.extendToEnd();
    // A wait for a slot the file no longer needs (every range taken) or that the stop ended is no failure.
    // Nor is one the store has no room for (it pushed back): it is not opened.
    const further = Array.from({ length: oneIsEnough ? 0 : connections - 1 }, () =>
      inSlot(settings.pool, poolSignal, () =>
        pressure?.roomy === false ? Promise.resolve() : connection(),
      ).catch(() => undefined),
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
