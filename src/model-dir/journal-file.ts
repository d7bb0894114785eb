/** The load journal's file: opened without following a link, replaced whole by a rename, read whole at start-up; and the 0.1 journal dir. */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorCode } from '../core/errors';
import { modelNameProblem, type ModelName } from '../core/model-name';
import {
  syncPath,
  entryKind,
  isTransientFsError,
  quick,
  readNoFollow,
  removeTree,
  withDir,
  type Handle,
} from '../fs';
import type { Logger } from '../log';
// The journal holds two short records per load and is compacted past 1 MiB, so a file past this size is not one
// we wrote: its records are ignored rather than read into memory.
const maxJournalBytes = 16 * 1024 * 1024;
// A neighbour who keeps planting things at the journal's path wins after this many evictions, with an error.
const openAttempts = 3;

const { O_RDWR, O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
// O_NOFOLLOW: a link at the path fails (ELOOP); O_NONBLOCK: a FIFO there cannot block the open.
const openFlags = O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK;
const createFlags = O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK;

/** The journal file held open for appending, and its size as far as we wrote it. */
export interface JournalFile {
  readonly handle: Handle;
  readonly stats: Stats;
  size: number;
}

/**
 * Removes whatever holds the journal's path (a link itself, never its target), with a warn saying what it was:
 * `found` when the caller knows better than its kind (a file this user may not open).
 */
const evict = async (path: string, log: Logger, found?: string): Promise<void> => {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return;
  found ??= info.isFile() ? 'a file with other hard links' : entryKind(info);
  log.warn({ path, found }, 'the load journal is not a file modelsync wrote; replacing it');
  await removeTree(path);
};

// A journal another user left (the pod's uid changed over a kept volume), 0600: it cannot be read or written, and
// every load would fail on its record. Its records are lost with it: the loads it had not confirmed are not redone.
const notOpenable =
  "a file of another user's that modelsync may not open (its unconfirmed loads are not redone)";

/** Opens (or creates, mode 0600) the journal file at `path`, evicting a link, dir, FIFO or socket found there. */
export const openJournalFile = async (path: string, log: Logger): Promise<JournalFile> => {
  for (let attempt = 1; ; attempt++) {
    let handle: Handle;
    try {
      handle = await quick.open(path, openFlags, 0o600);
    } catch (cause) {
      const code = errorCode(cause) ?? '';
      const refused = code === 'EACCES' || code === 'EPERM';
      if (!(refused || ['ELOOP', 'EISDIR', 'ENXIO'].includes(code)) || attempt >= openAttempts) throw cause;
      // A dir this user may not write fails the removal with its own error: the open's is the one that says why.
      await evict(path, log, refused ? notOpenable : undefined).catch((error: unknown) => {
        throw refused ? cause : error;
      });
      continue;
    }
    const stats = await handle.stat();
    if (stats.isFile()) return { handle, stats, size: stats.size };
    await handle.close();
    if (attempt >= openAttempts) throw new Error(`${path} keeps being replaced by ${entryKind(stats)}`);
    await evict(path, log);
  }
};

/**
 * The journal file at `path` opened read-only (a read-only volume), if it is a regular file; a transient failure
 * (EMFILE, EIO) is thrown, not taken for no journal: its records would be missed.
 */
export const openJournalReadOnly = async (path: string): Promise<JournalFile | undefined> => {
  const handle = await open(path, readNoFollow).catch((cause: unknown) => {
    if (isTransientFsError(cause)) throw cause;
    return undefined;
  });
  const stats = await handle?.stat();
  if (handle !== undefined && stats?.isFile()) return { handle, stats, size: stats.size };
  await handle?.close();
  return undefined;
};

/** The text of an opened journal file, or undefined (with a warn) when it is too large to be one we wrote. */
export const readJournalText = async (
  found: JournalFile,
  path: string,
  log: Logger,
): Promise<string | undefined> => {
  if (found.size > maxJournalBytes) {
    log.warn({ path, bytes: found.size }, 'the load journal is too large to be ours; ignoring its records');
    return undefined;
  }
  const buffer = Buffer.alloc(found.size);
  const { bytesRead } = await found.handle.read(buffer, 0, found.size, 0);
  return buffer.subarray(0, bytesRead).toString('utf8');
};

/**
 * Replaces the journal at `path` by one holding `text`, returned open for appending: written to `<path>.new`
 * (O_EXCL, once what was there is removed), flushed, renamed over whatever holds `path` (a dir is evicted). On a
 * failure before the rename `<path>.new` is removed (unfollowed): kept, a write cut short by a full disk held its
 * space until the next compaction.
 */
export const writeJournalFile = async (path: string, text: string, log: Logger): Promise<JournalFile> => {
  const next = `${path}.new`;
  await removeTree(next);
  const handle = await open(next, createFlags, 0o600);
  let renamed = false;
  try {
    await handle.writeFile(text);
    await handle.datasync();
    if ((await lstat(path).catch(() => undefined))?.isDirectory()) await evict(path, log);
    await rename(next, path);
    renamed = true;
    const stats = await handle.stat();
    await syncPath(dirname(path)).catch((err: unknown) =>
      log.warn({ err, path }, 'cannot flush the model dir'),
    );
    return { handle, stats, size: stats.size };
  } catch (cause) {
    await handle.close();
    if (!renamed)
      await removeTree(next).catch((err: unknown) =>
        log.warn({ err, path: next }, 'cannot remove the unfinished load journal'),
      );
    throw cause;
  }
};

/** Where modelsync up to 0.1 kept one empty file per unconfirmed load. */
export const legacyJournalDirName = '.modelsync-loads';

/** The model names in the 0.1 journal dir of `root`, read without following a link (a link there is not read). */
export const readLegacyJournalDir = async (root: string, log: Logger): Promise<ModelName[]> => {
  const dir = join(root, legacyJournalDirName);
  const info = await lstat(dir).catch(() => undefined);
  if (info === undefined) return [];
  if (!info.isDirectory()) {
    log.warn({ path: dir, found: entryKind(info) }, 'not the load journal dir modelsync wrote; removing it');
    return [];
  }
  const names = await withDir(dir, (held) => readdir(held.ref));
  return names.filter((name): name is ModelName => modelNameProblem(name) === undefined);
};
