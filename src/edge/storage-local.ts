/** localStorage: the StorageProvider for local paths and file:// URLs (a mounted volume holding the model). */
import { createReadStream, createWriteStream, type Dirent } from 'node:fs';
import { lstat, mkdir, readdir, realpath, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { EffectError, errorCode, errorMessage, permanentError, retryableError } from '../core/errors';
import type { StorageProvider } from '../ports';

// A missing or forbidden source stays so until someone changes the volume or the spec; anything else
// (EIO, ENOSPC, EMFILE, a file vanishing mid-copy) may pass.
const permanentCodes = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EPERM', 'ELOOP', 'ENAMETOOLONG']);

const toCopyError = (cause: unknown, what: string): EffectError => {
  if (cause instanceof EffectError) return cause;
  const message = `${what}: ${errorMessage(cause)}`;
  const code = errorCode(cause);
  return code !== undefined && permanentCodes.has(code)
    ? permanentError(message, cause)
    : retryableError(message, cause);
};

const sourcePathOf = (uri: string): string => {
  if (uri.startsWith('/')) return path.resolve(uri);
  try {
    return fileURLToPath(uri);
  } catch (cause) {
    throw permanentError(`${uri} is not a local path or file:// URL`, cause);
  }
};

const isInside = (root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
};

const copyFile = (from: string, to: string, signal: AbortSignal): Promise<void> =>
  // Streams rather than fs.copyFile: a multi-GiB copy must stop when the signal aborts.
  pipeline(createReadStream(from), createWriteStream(to, { flags: 'wx' }), { signal });

const throwIfAborted = (signal: AbortSignal, what: string): void => {
  if (signal.aborted) throw retryableError(`${what} aborted`, signal.reason);
};

interface Tree {
  readonly sourceRoot: string;
  readonly targetRoot: string;
  readonly signal: AbortSignal;
  readonly what: string;
}

const copyLink = async (tree: Tree, from: string, to: string): Promise<void> => {
  let resolved: string;
  try {
    resolved = await realpath(from);
  } catch (cause) {
    throw permanentError(
      `refusing symlink ${from}: it cannot be resolved (${errorCode(cause) ?? 'error'})`,
      cause,
    );
  }
  if (!isInside(tree.sourceRoot, resolved)) {
    throw permanentError(`refusing symlink ${from}: it points to ${resolved}, outside ${tree.sourceRoot}`);
  }
  // Relative, so the link survives the model store renaming the target dir into place.
  const mirrored = path.join(tree.targetRoot, path.relative(tree.sourceRoot, resolved));
  await symlink(path.relative(path.dirname(to), mirrored) || '.', to);
};

const copyEntry = async (tree: Tree, entry: Dirent, from: string, to: string): Promise<void> => {
  if (entry.isDirectory()) {
    await mkdir(to, { mode: 0o755 });
    await copyDir(tree, from, to);
  } else if (entry.isFile()) {
    await copyFile(from, to, tree.signal);
  } else if (entry.isSymbolicLink()) {
    await copyLink(tree, from, to);
  } else {
    // Reading a FIFO would block forever; sockets and devices are not model files.
    throw permanentError(`refusing ${from}: not a regular file, directory or symlink`);
  }
};

const copyDir = async (tree: Tree, from: string, to: string): Promise<void> => {
  const entries = await readdir(from, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    throwIfAborted(tree.signal, tree.what);
    await copyEntry(tree, entry, path.join(from, entry.name), path.join(to, entry.name));
  }
};

const download = async (uri: string, targetDir: string, signal: AbortSignal): Promise<void> => {
  const source = sourcePathOf(uri);
  const what = `copying ${source}`;
  throwIfAborted(signal, what);
  try {
    await lstat(source);
  } catch (cause) {
    throw errorCode(cause) === 'ENOENT'
      ? permanentError(`local path ${source} does not exist`, cause)
      : toCopyError(cause, what);
  }
  try {
    // The named path itself may be a symlink (a mounted volume's `..data`): the user chose it, so follow it.
    const sourceRoot = await realpath(source);
    const targetRoot = await realpath(targetDir);
    const info = await stat(sourceRoot);
    if (info.isFile()) {
      await copyFile(sourceRoot, path.join(targetRoot, path.basename(source)), signal);
      return;
    }
    if (!info.isDirectory()) throw permanentError(`refusing ${source}: not a regular file or directory`);
    if (isInside(sourceRoot, targetRoot)) {
      throw permanentError(`refusing to copy ${source} into ${targetDir}, which lies inside it`);
    }
    await copyDir({ sourceRoot, targetRoot, signal, what }, sourceRoot, targetRoot);
  } catch (cause) {
    if (signal.aborted) throw retryableError(`${what} aborted`, signal.reason);
    throw toCopyError(cause, what);
  }
};

/**
 * Copies a model from an absolute path or file:// URL: a file into `targetDir/<basename>`, a directory's
 * contents into `targetDir`. Symlinks that resolve inside the source tree are recreated as relative
 * symlinks to the copied entry (no duplication, no loops); symlinks leading outside it, or nowhere, fail the
 * download permanently, so a model cannot smuggle in files from elsewhere on the volume.
 */
export const localStorage = (): StorageProvider => ({ schemes: ['file'], download });
