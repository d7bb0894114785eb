/** listed-files: the files a manifest lists under a held dir, looked up and flushed by name, never by walking the tree. */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { dirsAbove } from '../core/dirs-above';
import { EffectError, errorCode } from '../core/errors';
import { forEachLimited, isMissing, step, syncPath } from './durable-fs';
import { openDir, readNoFollow, type OpenDir } from './no-follow';

// Names looked up or flushed at once in one dir.
const fanOut = 16;

/** Undefined for the errors of a path that leads to no real dir or file: missing, a link (ELOOP), a file on the way. */
const isNotThere = (cause: unknown): boolean => isMissing(cause) || errorCode(cause) === 'ELOOP';
const unlessNotThere = (cause: unknown): undefined => {
  if (isNotThere(cause)) return undefined;
  throw cause;
};

/**
 * What stands at a listed path is no file an install wrote: gone, behind a link, or put there by a neighbour as a
 * FIFO (fsync says EINVAL) or a socket (open says ENXIO). Skipped, so that the rest of the install is still flushed.
 */
const isNoFileOfOurs = (cause: unknown): boolean =>
  isNotThere(cause) || ['EINVAL', 'ENXIO'].includes(errorCode(cause) ?? '');

const isPathPart = (part: string): boolean => part !== '' && part !== '.' && part !== '..';

/**
 * Runs `use` on the handle path of the real dir `relative` (`/`-separated, '' for `dir` itself) under the held
 * `dir`, entered a level at a time by handle, never through a link, at most two of its dirs open however deep;
 * undefined when a level is missing, a link or no dir.
 */
const inSubdir = async <T>(
  dir: OpenDir,
  relative: string,
  use: (ref: string) => Promise<T>,
): Promise<T | undefined> => {
  if (relative === '') return use(dir.ref);
  let held: OpenDir | undefined;
  try {
    for (const part of relative.split('/')) {
      const next = isPathPart(part)
        ? await openDir(`${held?.ref ?? dir.ref}/${part}`).catch(unlessNotThere)
        : undefined;
      await held?.handle.close();
      held = next;
      if (held === undefined) return undefined;
    }
    return await use(held!.ref);
  } finally {
    await held?.handle.close();
  }
};

/**
 * The size of each of `paths` (relative, `/`-separated: a marker's manifest) that is a regular file under `dir`,
 * reached through real dirs only; the others are left out. Its cost is that of `paths`, whatever else the tree
 * holds (a neighbour's millions of files, or dirs nested past the descriptor limit): each dir named is entered
 * from `dir` by handle, at most two held at a time, and only the names listed are looked up.
 */
export const listedFileSizes = async (
  dir: OpenDir,
  paths: Iterable<string>,
): Promise<Map<string, number>> => {
  const sizes = new Map<string, number>();
  for (const [parent, names] of byParent(paths)) {
    await step(`cannot read ${join(dir.path, parent)}`, () =>
      inSubdir(dir, parent, (ref) =>
        forEachLimited(names, fanOut, async (name) => {
          const info = await lstat(`${ref}/${name}`).catch(unlessNotThere);
          if (info?.isFile()) sizes.set(parent === '' ? name : `${parent}/${name}`, info.size);
        }),
      ),
    );
  }
  return sizes;
};

/**
 * fsyncs each of `paths` (relative, `/`-separated: what an install wrote) that is a regular file under `dir`, then
 * every dir on their way bottom-up, `dir` last. Its cost is that of `paths`, as `listedFileSizes`'s: a tree a
 * neighbour planted meanwhile is neither walked nor held open. A listed file gone, behind a link or replaced by a
 * FIFO or a socket is skipped.
 */
export const syncListed = async (dir: OpenDir, paths: Iterable<string>): Promise<void> => {
  const parents = byParent(paths);
  for (const [parent, names] of parents) {
    await step(`cannot flush ${join(dir.path, parent)}`, () =>
      inSubdir(dir, parent, (ref) =>
        forEachLimited(names, fanOut, (name) =>
          syncPath(`${ref}/${name}`, readNoFollow, join(dir.path, parent, name)).catch((err: unknown) => {
            if (!isNoFileOfOurs(err instanceof EffectError ? err.cause : err)) throw err;
          }),
        ),
      ),
    );
  }
  for (const relative of dirsBottomUp(parents.keys()))
    await step(`cannot flush ${join(dir.path, relative)}`, () =>
      // `dir` itself through the handle it is held by: no open more per install.
      relative === '' ? dir.handle.sync() : inSubdir(dir, relative, (ref) => syncPath(ref)),
    );
};

/** The dirs `parents` (relative, `/`-separated) and every dir above them, the top (`''`) among them, deepest first. */
export const dirsBottomUp = (parents: Iterable<string>): string[] =>
  // Each dir's depth counted once, not at each comparison of the sort.
  [...dirsAbove(parents)]
    .map((dir) => [dir, depthOf(dir)] as const)
    .sort(([, a], [, b]) => b - a)
    .map(([dir]) => dir);

/** How many dirs deep the relative dir `dir` is (`''`, the top: 0). */
const depthOf = (dir: string): number => {
  let depth = dir === '' ? 0 : 1;
  for (let at = dir.indexOf('/'); at !== -1; at = dir.indexOf('/', at + 1)) depth++;
  return depth;
};

/** `paths` (relative, `/`-separated) by their parent dir ('' for the top), names that are no path part left out. */
const byParent = (paths: Iterable<string>): Map<string, string[]> => {
  const byDir = new Map<string, string[]>();
  for (const path of paths) {
    const cut = path.lastIndexOf('/');
    const parent = cut < 0 ? '' : path.slice(0, cut);
    const name = path.slice(cut + 1);
    if (!isPathPart(name)) continue;
    const names = byDir.get(parent);
    if (names === undefined) byDir.set(parent, [name]);
    else names.push(name);
  }
  return byDir;
};
