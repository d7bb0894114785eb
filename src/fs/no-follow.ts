/** no-follow: file-system steps that never go through a link — dirs held open and reached by handle, files opened O_NOFOLLOW, trees deleted link by link. */
import { constants, existsSync, type Dirent, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { EffectError, errorCode } from '../core/errors';
import { forEachLimited, isMissing, step } from './durable-fs';
import { quick, type Handle } from './quick-calls';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Flags to read a file expected regular: a link is refused (ELOOP), a FIFO planted there does not block. */
export const readNoFollow = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

// Linux's /proc/self/fd/<n> reaches the dir an fd holds whatever is done to its path meanwhile: the openat() that
// Node lacks. Without /proc (not Linux) the path itself is used, and a swap between check and use stays possible.
let procFd: boolean | undefined;
/** `handle` as a path that reaches the very file or dir it holds (`/proc/self/fd/<n>`); `path` without /proc. */
export const handlePath = (handle: Handle, path: string): string => {
  procFd ??= existsSync('/proc/self/fd');
  return procFd ? `/proc/self/fd/${handle.fd}` : path;
};

/**
 * A real directory held open at `path` (for messages and renames): `ref` (`/proc/self/fd/<n>`) reaches its entries
 * even after its path is swapped; `stats` (fstat when opened) say whether a path still leads to it.
 */
export interface OpenDir {
  readonly handle: Handle;
  readonly path: string;
  readonly ref: string;
  readonly stats: Stats;
}

/**
 * `error` with each dir's handle path (`/proc/self/fd/<n>`) in its message replaced by the dir's own path, for a
 * reader; not followed by a digit, so /proc/self/fd/2 never rewrites the start of /proc/self/fd/23.
 */
/** The handle path `ref` in a text, not followed by a digit (/proc/self/fd/2 is not the start of /proc/self/fd/23). */
const handlePathOf = (ref: string): RegExp =>
  new RegExp(`${ref.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?!\\d)`, 'g');

export const namingDirs = (error: unknown, dirs: ReadonlyArray<OpenDir>): unknown => {
  if (!(error instanceof EffectError)) return error;
  const message = dirs.reduce((text, dir) => text.replace(handlePathOf(dir.ref), dir.path), error.message);
  if (message === error.message) return error;
  const { kind, status, retryable, cause } = error;
  return new EffectError(message, retryable, { kind, ...(status === undefined ? {} : { status }), cause });
};

/**
 * Opens the real dir at `path` (fails, ELOOP or ENOTDIR, when it is a link or no dir), and runs `alongside` on its
 * handle path while it is fstat'ed: one wait for both (each is a trip through libuv's pool).
 */
const openDirWith = async <T>(
  path: string,
  alongside: (ref: string) => Promise<T>,
): Promise<{ readonly dir: OpenDir; readonly also: T }> => {
  const handle = await quick.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    const ref = handlePath(handle, path);
    const [stats, also] = await Promise.all([handle.stat(), alongside(ref)]);
    return { dir: { handle, path, ref, stats }, also };
  } catch (cause) {
    await handle.close();
    throw cause;
  }
};

/** Opens the real dir at `path`; fails (ELOOP, ENOTDIR) when it is a link or no dir. */
export const openDir = async (path: string): Promise<OpenDir> =>
  (await openDirWith(path, () => Promise.resolve())).dir;

/**
 * `openDir`, with the names in the dir read through its handle; a listing that fails fails the open, with its errno
 * (read as `['?']`, a listing cut short by EMFILE was taken for a dir someone else had filled).
 */
export const openListedDir = async (
  path: string,
): Promise<OpenDir & { readonly entries: ReadonlyArray<string> }> => {
  const { dir, also } = await openDirWith(path, (ref) => quick.readdir(ref));
  return { ...dir, entries: also };
};

export const withDir = async <T>(path: string, use: (dir: OpenDir) => Promise<T>): Promise<T> => {
  const dir = await openDir(path);
  try {
    return await use(dir);
  } finally {
    await dir.handle.close();
  }
};

/**
 * Runs `use` on a path that reaches `relative` (`/`-separated, no `..` part) under the dir `root`: its dirs are
 * made (`mode`) where missing and entered a level at a time by handle, never through a link, so a neighbour who
 * swaps one for a link (to /etc, to another model) fails the call (ELOOP, ENOTDIR) instead of redirecting it. The
 * path (`/proc/self/fd/<n>/<name>`) reaches the entry while `use` runs; one at the top is `root/<name>` as it is.
 */
export const inRealDirs = async <T>(
  root: string,
  relative: string,
  use: (at: string) => Promise<T>,
  mode?: number,
): Promise<T> => {
  // Empty and `.` parts dropped, as path.join drops them.
  const parts = relative.split('/').filter((part) => part !== '' && part !== '.');
  const name = parts.pop();
  if (name === undefined || name === '..' || parts.includes('..'))
    throw new Error(`inRealDirs: ${JSON.stringify(relative)} is no path below a dir`);
  let held: OpenDir | undefined;
  try {
    for (const part of parts) {
      const at = `${held?.ref ?? root}/${part}`;
      const next = await step(`cannot make or enter the dir ${part} of ${held?.path ?? root}`, async () => {
        await mkdir(at, mode).catch((cause: unknown) => {
          if (errorCode(cause) !== 'EEXIST') throw cause; // made for an earlier entry, or something else is there
        });
        return { ...(await openDir(at)), path: join(held?.path ?? root, part) };
      });
      await held?.handle.close();
      held = next;
    }
    return await use(`${held?.ref ?? root}/${name}`);
  } finally {
    await held?.handle.close();
  }
};

/** True when `path` (not followed) is the very entry `stats` describes. */
export const isSameEntry = async (path: string, stats: Stats): Promise<boolean> => {
  try {
    const now = await quick.lstat(path);
    return now.dev === stats.dev && now.ino === stats.ino && now.isDirectory() === stats.isDirectory();
  } catch (cause) {
    if (isMissing(cause)) return false;
    throw cause;
  }
};

// Bounds the open descriptors of a delete or flush: entries of one dir at a time, dirs one by one.
const fanOut = 16;
// A neighbour racing a delete can make an entry change type under us; after this many tries it wins, loudly.
const removeAttempts = 5;
// What a dir moved up inside a tree being deleted is named; it is deleted with the tree.
const hoistedPrefix = '.deleting-';

const unlessGone = (cause: unknown): void => {
  if (errorCode(cause) !== 'ENOENT') throw cause;
};

/**
 * `cause` (an errno error, thrown on) with the handle path `ref` in its message read as `shown`, the path it stands
 * for: Node names the path it was given, and `/proc/self/fd/<n>` is a descriptor closed, maybe reused, by the time
 * the line is read.
 */
const shownAt = (cause: unknown, ref: string, shown: string): unknown => {
  if (ref !== shown && typeof cause === 'object' && cause !== null && 'message' in cause) {
    if (typeof cause.message === 'string') cause.message = cause.message.replace(handlePathOf(ref), shown);
  }
  return cause;
};

/** Removes the entries of the held `dir` that are no dir; returns the names of those that are. */
const removeNonDirs = async (dir: OpenDir): Promise<string[]> => {
  const entries = await readdir(dir.ref, { withFileTypes: true });
  const others = entries.filter((entry) => !entry.isDirectory());
  await forEachLimited(others, fanOut, (entry) => removeEntry(`${dir.ref}/${entry.name}`));
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
};

/**
 * Empties the held `dir` holding at most one more dir open, however deep its tree: one descriptor a level let a
 * tree deeper than the descriptor limit (a neighbour can nest dirs at will) fail with EMFILE, every other open of
 * the process with it. Each subdir's own subdirs are moved up into `dir` (a rename moves a link itself, never its
 * target), its other entries removed and it deleted; what was moved up is taken in the next round.
 */
const emptyDir = async (dir: OpenDir, shown: string): Promise<void> => {
  try {
    for (let subdirs = await removeNonDirs(dir); subdirs.length > 0; subdirs = await removeNonDirs(dir)) {
      for (const name of subdirs) {
        const path = `${dir.ref}/${name}`;
        // Gone meanwhile is done (a neighbour deleted it); anything else goes up to removeEntry's look again.
        await withDir(path, async (sub) => {
          try {
            for (const inner of await removeNonDirs(sub)) {
              const hoisted = `${dir.ref}/${hoistedPrefix}${randomBytes(8).toString('hex')}`;
              await rename(`${sub.ref}/${inner}`, hoisted).catch(unlessGone);
            }
          } catch (cause) {
            throw shownAt(cause, sub.ref, path);
          }
        }).catch(unlessGone);
        await rmdir(path).catch(unlessGone);
      }
    }
  } catch (cause) {
    throw shownAt(cause, dir.ref, shown);
  }
};

/** Removes the entry at `path`: a dir with all it holds (entered by handle), anything else by unlink (a link itself). */
const removeEntry = async (path: string): Promise<void> => {
  for (let attempt = 1; ; attempt++) {
    try {
      if ((await lstat(path)).isDirectory()) {
        await withDir(path, (dir) => emptyDir(dir, path));
        await rmdir(path);
      } else await unlink(path);
      return;
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') return;
      // It changed type (a dir became a link: ELOOP/ENOTDIR; a file became a dir: EISDIR) or grew: look again.
      const raced = ['ELOOP', 'ENOTDIR', 'EISDIR', 'EPERM', 'ENOTEMPTY', 'EEXIST'].includes(
        errorCode(cause) ?? '',
      );
      if (!raced || attempt >= removeAttempts) throw cause;
    }
  }
};

/** Sets the mode of the file at `path` (one of ours, just made), never through a link; `what` names a failure. */
export const chmodNoFollow = async (path: string, mode: number, what: string): Promise<void> => {
  const file = await step(what, () => open(path, constants.O_RDONLY | constants.O_NOFOLLOW));
  try {
    await step(what, () => file.chmod(mode));
  } finally {
    await file.close();
  }
};

/**
 * Deletes `path` and, when it is a real dir, everything under it; never follows a link (a link is unlinked, its
 * target left alone), even one swapped in while the delete runs. A missing path counts as done.
 */
export const removeTree = (path: string): Promise<void> =>
  step(`cannot delete ${path}`, () => removeEntry(path));

/**
 * `stats` with the lstat of every regular file under `dir` (`fanOut` at a time) added, by `/`-separated relative
 * path after `prefix`; links are not followed. `listed`: the entries of `dir` itself when the caller has just read them.
 */
const statTree = async (
  dir: OpenDir,
  stats: Map<string, Stats>,
  prefix: string,
  listed?: ReadonlyArray<Dirent>,
): Promise<Map<string, Stats>> => {
  const entries =
    listed ?? (await step(`cannot list ${dir.path}`, () => readdir(dir.ref, { withFileTypes: true })));
  const files = entries.filter((entry) => entry.isFile());
  await forEachLimited(files, fanOut, async ({ name }) => {
    const info = await step(`cannot read ${join(dir.path, name)}`, () => lstat(`${dir.ref}/${name}`));
    if (info.isFile()) stats.set(prefix + name, info);
  });
  for (const { name } of entries.filter((entry) => entry.isDirectory())) {
    const child = join(dir.path, name);
    await step(`cannot read ${child}`, () =>
      withDir(`${dir.ref}/${name}`, (sub) => statTree({ ...sub, path: child }, stats, `${prefix}${name}/`)),
    );
  }
  return stats;
};

/** The lstat of every regular file under `dir` by `/`-separated relative path; `listed` as in `statTree`. */
export const fileStats = (dir: OpenDir, listed?: ReadonlyArray<Dirent>): Promise<Map<string, Stats>> =>
  statTree(dir, new Map(), '', listed);

/** The size of every regular file under `dir` by `/`-separated relative path; `listed` as in `statTree`. */
export const fileSizes = async (dir: OpenDir, listed?: ReadonlyArray<Dirent>): Promise<Map<string, number>> =>
  new Map([...(await fileStats(dir, listed))].map(([relative, info]) => [relative, info.size]));
