/** durable-fs: the file-system steps every edge shares — one classification of fs errors, fsync, streaming into new files, bounded fan-out. */
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { EffectError, errorCode, errorMessage, isAbortError, retryableError } from '../core/errors';
import { untilAborted } from '../core/waits';
import { quick } from './quick-calls';

// The transient errno codes: a full disk, a quota, an I/O error, too many open files, a busy or stale (NFS) file
// may pass. Every other code (ENOENT, EACCES, EROFS, ...) recurs until someone changes the files.
const transientCodes = new Set(
  'ENOSPC EDQUOT EIO EMFILE ENFILE EAGAIN EBUSY ENOMEM EINTR ESTALE ETIMEDOUT'.split(' '),
);

export const isTransientFsError = (cause: unknown): boolean => transientCodes.has(errorCode(cause) ?? '');

/** A full disk or a quota: transient, but what passes it is someone freeing space, not a second try soon after. */
export const isNoSpace = (cause: unknown): boolean => ['ENOSPC', 'EDQUOT'].includes(errorCode(cause) ?? '');

/**
 * A failure of `what` as a `filesystem` EffectError, retryable when its errno code is transient. An EffectError
 * passes unchanged; an abort is `aborted`; one without an errno code (a bug, most likely) is `unknown`, retryable.
 */
export const fsError = (what: string, cause: unknown): EffectError => {
  if (cause instanceof EffectError) return cause;
  if (isAbortError(cause)) return retryableError('aborted', `${what}: aborted`, cause);
  const message = `${what}: ${errorMessage(cause)}`;
  if (errorCode(cause) === undefined) return retryableError('unknown', message, cause);
  return new EffectError(message, isTransientFsError(cause), { kind: 'filesystem', cause });
};

export const step = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
  try {
    return await run();
  } catch (cause) {
    throw fsError(what, cause);
  }
};

/** True for the errors of a path that is not there. */
export const isMissing = (cause: unknown): boolean => ['ENOENT', 'ENOTDIR'].includes(errorCode(cause) ?? '');

/**
 * Feeds `source` to `sink` and settles as `sink` does, except for the failures that are not the sink's to
 * classify: an error `source` itself throws (a lost connection: its owner knows it best) and any error once
 * `signal` has aborted come out as they were; every other failure goes through `classify`. An abort stops the
 * reading at once, even from a source that ignores the signal.
 */
export const consume = async <T>(
  source: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  sink: (chunks: AsyncIterable<Buffer>) => Promise<T>,
  classify: (cause: unknown) => unknown,
): Promise<T> => {
  let sourceFailure: { cause: unknown } | undefined;
  // No read is asked for once aborted; each read's listener is removed when it settles (every chunk would otherwise
  // stay reachable from the signal until the download ends).
  const read = (iterator: AsyncIterator<Uint8Array>): Promise<IteratorResult<Uint8Array>> =>
    signal.aborted ? Promise.reject(signal.reason as Error) : untilAborted(iterator.next(), signal);
  async function* chunks(): AsyncGenerator<Buffer> {
    const iterator = source[Symbol.asyncIterator]();
    try {
      for (let next = await read(iterator); next.done !== true; next = await read(iterator)) {
        yield Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      }
    } catch (cause) {
      if (!signal.aborted) sourceFailure = { cause };
      throw cause;
    } finally {
      // Not awaited: a source stuck in a read finishes its return() only when that read does.
      iterator.return?.().catch(() => undefined);
    }
  }
  try {
    return await sink(chunks());
  } catch (cause) {
    if (sourceFailure !== undefined) throw sourceFailure.cause;
    if (signal.aborted) throw cause;
    throw classify(cause);
  }
};

// What a file being written buffers before the source waits. Node's 16 KiB is less than one socket read (64 KiB):
// network and disk took turns, a 1 GiB loopback download ran at 470 MB/s, at 700 MB/s with 1 MiB a download.
const fileWriteBufferBytes = 1024 * 1024;

// A body announced at most this big is gathered and written with one writeFile: for a few KiB, setting up a write
// stream and its pipeline cost more than the write itself (measured: 0.56 ms for 1 KiB, on a load's path).
const smallFileBytes = 64 * 1024;

const writeGathered = async (chunks: AsyncIterable<Buffer>, to: string): Promise<number> => {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  const bytes = Buffer.concat(parts);
  await quick.writeFile(to, bytes, { flag: 'wx' });
  return bytes.byteLength;
};

/**
 * Streams `chunks` into the new file `to`. A failure settles only once the file is closed: the stream opens it
 * asynchronously, and a caller deleting `to` after a failure must not race an open that creates it afterwards.
 */
const writeStreamed = async (
  chunks: AsyncIterable<Buffer>,
  to: string,
  signal: AbortSignal,
): Promise<number> => {
  const file = createWriteStream(to, { flags: 'wx', highWaterMark: fileWriteBufferBytes });
  try {
    await pipeline(chunks, file, { signal });
    return file.bytesWritten;
  } catch (cause) {
    if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
    throw cause;
  }
};

/**
 * Streams `source` into the new file `to` (one already there fails, never is replaced); one announced
 * (`expectedBytes`) as small is gathered and written in one call. Resolves to the bytes written. Write failures
 * are fsErrors naming `what`.
 */
export const writeNewFile = (
  source: AsyncIterable<Uint8Array>,
  to: string,
  signal: AbortSignal,
  what: string,
  expectedBytes?: number,
): Promise<number> =>
  consume(
    source,
    signal,
    (chunks) =>
      expectedBytes !== undefined && expectedBytes <= smallFileBytes
        ? writeGathered(chunks, to)
        : writeStreamed(chunks, to, signal),
    (cause) => fsError(what, cause),
  );

/** Runs `run` over `items`, at most `limit` at a time; the first failure is thrown once all running ones end. */
export const forEachLimited = async <T>(
  items: ReadonlyArray<T>,
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> => {
  let next = 0;
  let failure: { cause: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await run(item);
      } catch (cause) {
        failure ??= { cause };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.cause;
};

/** fsyncs a file or a directory (`flags`: how it is opened; `shown`: its path in a failure). */
export const syncPath = (path: string, flags: string | number = 'r', shown = path): Promise<void> =>
  step(`cannot flush ${shown}`, async () => {
    const handle = await open(path, flags);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
