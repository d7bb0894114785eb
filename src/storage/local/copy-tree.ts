/**
 * copyTree: a local or `pvc://` model's tree copied (or linked) into a staging dir, every dir of the source and of the
 * target entered by handle, so that a dir the model server swaps for a link on a volume it shares is never followed.
 */
import { constants, type Dirent } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, symlink } from 'node:fs/promises';
import path from 'node:path';
import { errorCode, permanentError, retryableError } from '../../core/errors';
import { modelFileMode } from '../../core/model-file-mode';
import { chmodNoFollow, inRealDirs, openDir, type FileCopier } from '../../fs';
import type { EntrySelection } from '../archive/entry-selection';
import type { EntryKind } from '../archive/guard';
import type { TransferGuard } from '../transfer-guard';
import { checkNotSystem, isInside } from './local-roots';

export const throwIfAborted = (signal: AbortSignal, what: string): void => {
  if (signal.aborted) throw retryableError('aborted', `${what} aborted`, signal.reason);
};

/** One copy of a tree: its roots, what stops it and counts its bytes, how files are placed and which are taken. */
export interface Tree {
  readonly sourceRoot: string;
  readonly targetRoot: string;
  readonly signal: AbortSignal;
  readonly what: string;
  readonly guard: TransferGuard;
  /** Copies each file, counted by the guard: a clone where the file system has them. */
  readonly copy: FileCopier;
  /** Each file a symlink to its canonical path instead of a copy (`files: 'link'`). */
  readonly link: boolean;
  /** The files the model's patterns take, by path in the tree; absent: every entry is copied. */
  readonly selection?: EntrySelection;
}

/** True when the file or link at `from` is to be copied (its dirs are made as it is placed). */
const takes = (tree: Tree, from: string, kind: EntryKind): boolean =>
  tree.selection === undefined || tree.selection.takes(path.relative(tree.sourceRoot, from), kind, from);

/** Runs `place` on a path reaching `to`, its dirs made and entered by handle: the model server may plant a link. */
const placed = (tree: Tree, to: string, place: (at: string) => Promise<void>): Promise<void> =>
  inRealDirs(tree.targetRoot, path.relative(tree.targetRoot, to), place, 0o755);

// O_NOFOLLOW: a file swapped for a link since it was listed is not followed; O_NONBLOCK: nor does a FIFO
// swapped in block the open. fstat on the opened file then says what was really opened.
const openFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * With `files: 'link'`, a file up to this size is copied even so: a model's own config files (config.pbtxt,
 * model-settings.json), which the checks before a load read and never through a link, are then files of the model
 * dir as with a copy; and so small a file costs no room worth saving.
 */
export const copiedUpToBytes = 2 ** 20;

// Each file is opened once and its bytes read through that handle, so what was checked is what is copied. A linked
// file is checked the same way; `from` is its canonical path (the root resolved, every dir below it listed as a
// dir), which the link names absolutely: the model server resolves it in its own mount of the volume. It takes no
// room, so the guard's caps, which keep the model dir's disk, do not count it. `at`: where it is opened (by its dir's
// handle, in a tree).
export const copyFile = async (tree: Tree, from: string, to: string, at = from): Promise<void> => {
  const handle = await open(at, openFlags);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw permanentError('refused', `refusing ${from}: not a regular file`);
    if (tree.link && info.size > copiedUpToBytes) return await symlink(from, to);
    await tree.guard.admit(info.size);
    await tree.copy({ handle, size: info.size, path: from, to, signal: tree.signal, what: tree.what });
    await chmodNoFollow(to, modelFileMode(info.mode), tree.what); // readable by the model server
  } finally {
    await handle.close();
  }
};

const copyLink = async (tree: Tree, from: string, to: string): Promise<void> => {
  const refuse = (why: string, cause?: unknown): never => {
    throw permanentError('refused', `refusing symlink ${from}: ${why}`, cause);
  };
  const resolved = await realpath(from).catch((cause: unknown) =>
    refuse(`it cannot be resolved (${errorCode(cause) ?? 'error'})`, cause),
  );
  if (!isInside(tree.sourceRoot, resolved)) refuse(`it points to ${resolved}, outside ${tree.sourceRoot}`);
  // With patterns, a link they take to a file they leave out brings that file's bytes: its target is not copied.
  const { selection } = tree;
  const relative = path.relative(tree.sourceRoot, resolved);
  if (selection !== undefined && !selection.passes(relative)) {
    // Opened from its dir entered from the root by handle: a dir on its way swapped for a link since it was
    // resolved (the model server may write the source's volume) fails, never read through.
    const parts = relative.split(path.sep);
    const name = parts.pop()!;
    const copied = await inSourceDir(tree, parts, async (held) => {
      if (name === '' || !(await lstat(`${held}/${name}`)).isFile()) return false;
      await placed(tree, to, (at) => copyFile(tree, resolved, at, `${held}/${name}`));
      return true;
    });
    if (copied) return;
  }
  // Relative, so the link survives the model store renaming the target dir into place.
  const mirrored = path.join(tree.targetRoot, path.relative(tree.sourceRoot, resolved));
  await placed(tree, to, (at) => symlink(path.relative(path.dirname(to), mirrored) || '.', at));
};

/**
 * Runs `use` on the handle path of the source dir `parts` below the tree's root, entered from the root a level at a
 * time by handle, at most two held: a dir swapped for a link since it was listed fails (ELOOP, ENOTDIR), never read
 * through; a tree nested past the descriptor limit holds no descriptor a level.
 */
const inSourceDir = async <T>(
  tree: Tree,
  parts: ReadonlyArray<string>,
  use: (held: string) => Promise<T>,
): Promise<T> => {
  let held = await openDir(tree.sourceRoot);
  try {
    for (const part of parts) {
      const next = await openDir(`${held.ref}/${part}`);
      await held.handle.close();
      held = next;
    }
    return await use(held.ref);
  } finally {
    await held.handle.close();
  }
};

/** Copies `entry`, no dir, of the source dir held at `held` (its path `from`) to `to`. */
const copyEntry = async (
  tree: Tree,
  held: string,
  entry: Dirent,
  from: string,
  to: string,
): Promise<void> => {
  if (entry.isFile()) {
    const at = `${held}/${entry.name}`;
    if (takes(tree, from, 'file')) await placed(tree, to, (into) => copyFile(tree, from, into, at));
  } else if (entry.isSymbolicLink()) {
    if (takes(tree, from, 'symlink')) await copyLink(tree, from, to);
  } else {
    // Reading a FIFO would block forever; sockets and devices are not model files.
    throw permanentError('refused', `refusing ${from}: not a regular file, directory or symlink`);
  }
};

/**
 * Copies the entries of the source dir `from` (`parts` below the root, each entered by handle) to `to`, in name order;
 * the entries between two dirs are copied from one walk to their dir.
 */
export const copyDir = async (
  tree: Tree,
  from: string,
  to: string,
  parts: ReadonlyArray<string> = [],
): Promise<void> => {
  const entries = await inSourceDir(tree, parts, (held) => readdir(held, { withFileTypes: true }));
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (let next = 0; next < entries.length;) {
    throwIfAborted(tree.signal, tree.what);
    const entry = entries[next]!;
    const [source, target] = [path.join(from, entry.name), path.join(to, entry.name)];
    if (entry.isDirectory()) {
      // A mount point inside the tree may be a pseudo filesystem (a source of `/` would reach /proc).
      await checkNotSystem(source, tree.what);
      if (tree.selection === undefined) await placed(tree, target, (into) => mkdir(into, { mode: 0o755 }));
      await copyDir(tree, source, target, [...parts, entry.name]);
      next++;
      continue;
    }
    const end = entries.findIndex((later, at) => at > next && later.isDirectory());
    const run = entries.slice(next, end === -1 ? entries.length : end);
    await inSourceDir(tree, parts, async (held) => {
      for (const file of run) {
        throwIfAborted(tree.signal, tree.what);
        await copyEntry(tree, held, file, path.join(from, file.name), path.join(to, file.name));
      }
    });
    next += run.length;
  }
};
