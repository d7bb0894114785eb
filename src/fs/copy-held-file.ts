/**
 * fileCopier: files held open copied into new files, never through a link — a clone where the file system shares
 * blocks copy-on-write (btrfs, XFS with reflink), else the bytes, a big file streamed so that an abort stops it.
 */
import { constants } from 'node:fs';
import { copyFile, lstat, type FileHandle } from 'node:fs/promises';
import { errorCode } from '../core/errors';
import { createSlots } from '../core/slots';
import { fsError, step, writeNewFile } from './durable-fs';
import { handlePath } from './no-follow';

/** How a file's bytes came into the new file: shared copy-on-write with the source, or written. */
export type CopyHow = 'cloned' | 'copied';

/** Sees the bytes a copy writes (a transfer guard): a streamed copy's as they pass, any other's once done. */
export interface CopyCounter {
  readonly count: (source: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>;
  readonly counted: (bytes: number) => void;
}

/**
 * One file to copy: `handle`, opened without following a link and checked by the caller (who closes it), is read
 * through `/proc/self/fd/<n>` whatever holds `path` by then; `size` as checked says whether the copy is streamed;
 * an entry already at `to` (a planted link) fails the copy and is not written through; `what` names a failure.
 */
export interface HeldFile {
  readonly handle: FileHandle;
  readonly size: number;
  readonly path: string;
  readonly to: string;
  readonly signal: AbortSignal;
  readonly what: string;
}

/** Copies one file; says how, and how many bytes the new file holds. */
export type FileCopier = (file: HeldFile) => Promise<{ readonly how: CopyHow; readonly bytes: number }>;

// Up to this size a file is copied by the kernel in one call (copy_file_range), which cannot be aborted half-way
// but takes milliseconds; a bigger one is streamed, so that it stops when the signal aborts.
const kernelCopyMaxBytes = 8 * 1024 * 1024;

// Streamed copies at once per copier: each buffers up to 1 MiB (writeNewFile), and one disk gains little from more.
const streamsAtOnce = 4;

// The clone (FICLONE) is refused by a file system without it (ext4, tmpfs: EOPNOTSUPP, reported as ENOTSUP),
// across file systems (EXDEV), for files it cannot share (EINVAL), and where the ioctl is unknown (ENOTTY,
// ENOSYS). Node removes the target a failed copy created.
const noCloneCodes = new Set(['ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EINVAL', 'ENOTTY', 'ENOSYS']);

/**
 * A copier for the files of one tree. The first file tries a clone while the others wait for its verdict: they
 * clone as it did, or all copy once the file system refused (and so does every file after a refusal). The new file
 * shares no write with the source either way; created with `O_EXCL`, it is never an entry that was there before.
 */
export const fileCopier = ({
  counter,
  beforeCopying,
}: {
  readonly counter?: CopyCounter;
  /** Runs once, before the first copy that is no clone (a disk check: a clone takes no space of its own). */
  readonly beforeCopying?: () => Promise<void>;
} = {}): FileCopier => {
  /** Whether this file system clones: settled by the first attempt. */
  let clones: Promise<boolean> | undefined;
  let ready: Promise<void> | undefined;
  const streams = createSlots(streamsAtOnce);

  const whole = async (file: HeldFile, flags: number): Promise<number> => {
    await copyFile(handlePath(file.handle, file.path), file.to, flags);
    // It may have changed since it was checked: the caller compares.
    const { size } = await lstat(file.to);
    counter?.counted(size);
    return size;
  };

  const cloned = async (file: HeldFile): Promise<number | undefined> => {
    if (clones !== undefined && !(await clones)) return undefined;
    const attempt = whole(file, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE_FORCE).catch(
      (cause: unknown) => {
        if (!noCloneCodes.has(errorCode(cause) ?? '')) throw fsError(file.what, cause);
        clones = Promise.resolve(false);
        return undefined;
      },
    );
    // A failure for another reason (EIO) says nothing of the file system: the waiting files try for themselves.
    clones ??= attempt.then(
      (bytes) => bytes !== undefined,
      () => true,
    );
    return attempt;
  };

  const streamed = (file: HeldFile): Promise<number> =>
    streams.use(file.signal, async () => {
      const content = file.handle.createReadStream({ start: 0, autoClose: false });
      try {
        const source = counter?.count(content) ?? content;
        await writeNewFile(source, file.to, file.signal, file.what);
      } finally {
        content.destroy();
      }
      return (await step(file.what, () => lstat(file.to))).size;
    });

  return async (file) => {
    const clonedBytes = await cloned(file);
    if (clonedBytes !== undefined) return { how: 'cloned', bytes: clonedBytes };
    await (ready ??= beforeCopying?.() ?? Promise.resolve());
    file.signal.throwIfAborted();
    const bytes =
      file.size <= kernelCopyMaxBytes
        ? await step(file.what, () => whole(file, constants.COPYFILE_EXCL))
        : await streamed(file);
    return { how: 'copied', bytes };
  };
};
