/** The model dir M itself: each model's path in it, what holds a name, temporary names, moving aside and deleting. */
import { randomBytes } from 'node:crypto';
import { rename, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { errorCode, permanentError } from '../core/errors';
import { modelNameProblem } from '../core/model-name';
import { entryKind, fsError, isMissing, makeDirs, quick, removeTree, step, withDir } from '../fs';
import type { Logger } from '../log';
import { readDirState, type DirState } from './marker-file';

// Reserved prefixes: model names cannot start with '.', so these never collide with a model dir.
const stagingPrefix = '.tmp-';
const asidePrefix = '.old-';

/** A short readable form of the name for temporary dir names, well inside NAME_MAX even for 255-byte names. */
const nameTag = (name: string): string => Array.from(name).slice(0, 48).join('');

/** True for the store's staging and move-aside dirs. */
export const isTemporary = (entry: string): boolean =>
  entry.startsWith(stagingPrefix) || entry.startsWith(asidePrefix);

/** What an entry of the model dir is, read without following a link. */
export type Found =
  | { readonly _tag: 'Missing' }
  | { readonly _tag: 'NotADir'; readonly path: string; readonly kind: string }
  | {
      readonly _tag: 'Dir';
      readonly state: DirState;
      /** Why the dir is not modelsync's to move or delete (unless it holds a valid marker), if it is not. */
      readonly foreign: string | undefined;
    };

/** Why the dir at `path` is not modelsync's: the file system's lost+found, or another mounted file system. */
const foreignReason = (path: string, dev: number, rootDev: number): string | undefined => {
  if (basename(path) === 'lost+found') return "the file system's lost+found";
  return dev === rootDev ? undefined : 'another file system mounted there';
};

/**
 * What is at `path`, an entry of the model dir, read without following a link (a dir's markers through its handle);
 * throws the fs error when it cannot be read. `rootDevice`: the model dir's device (another device is a mount).
 */
const inspectEntry = async (rootDevice: () => Promise<number>, path: string): Promise<Found> => {
  const info = await quick.lstat(path).catch((cause: unknown) => {
    if (isMissing(cause)) return undefined;
    throw cause;
  });
  if (info === undefined) return { _tag: 'Missing' };
  if (!info.isDirectory()) return { _tag: 'NotADir', path, kind: entryKind(info) };
  const foreign = foreignReason(path, info.dev, await rootDevice());
  try {
    return { _tag: 'Dir', state: await withDir(path, readDirState), foreign };
  } catch (cause) {
    const code = errorCode(cause);
    if (code === 'ENOENT') return { _tag: 'Missing' };
    // Swapped for a link or a file between the lstat and the open.
    if (code === 'ELOOP' || code === 'ENOTDIR')
      return { _tag: 'NotADir', path, kind: 'an entry that changed while read' };
    // A root-only lost+found is still the file system's when we run as another user.
    if (code === 'EACCES' && foreign !== undefined)
      return { _tag: 'Dir', state: { _tag: 'NoMarker' }, foreign };
    throw cause;
  }
};

const stateWords: Readonly<Record<DirState['_tag'], string>> = {
  Valid: 'the marker of another spec',
  NoMarker: 'a dir without a marker',
  Ambiguous: 'a dir with several markers',
  Corrupt: 'a dir with a corrupt marker',
  Unreadable: 'a dir whose marker modelsync may not read',
};

/** What was found, in words for a log line (when it is not the model expected). */
export const describeFound = (found: Found): string => {
  if (found._tag === 'Missing') return 'nothing';
  return found._tag === 'NotADir' ? found.kind : stateWords[found.state._tag];
};

/** M as the store, the staging, the swap and recovery act on it. */
export type ModelDirRoot = ReturnType<typeof modelDirRoot>;

export const modelDirRoot = (path: string, log: Logger) => {
  const root = resolve(path);
  // M's device, read once: what sits on another device is a mount point, not a model dir of ours.
  let rootDev: number | undefined;
  const rootDevice = async (): Promise<number> => (rootDev ??= (await stat(root)).dev);
  // Made once, then trusted: a root deleted later fails the staging dir's creation, which makes it again.
  let rootMade = false;

  /** Renames `path` to a fresh `.old-` sibling; undefined when there is nothing to move. */
  const moveAside = async (path: string, name: string): Promise<string | undefined> => {
    const aside = join(root, `${asidePrefix}${nameTag(name)}-${randomBytes(6).toString('hex')}`);
    try {
      await rename(path, aside);
      return aside;
    } catch (cause) {
      if (isMissing(cause)) return undefined;
      throw fsError(`cannot move ${path} aside`, cause);
    }
  };

  return {
    root,
    log,
    /** `M/<name>`; refused (defence in depth: ModelName already refuses such names) when it would reach outside M. */
    modelDir: (name: string): string => {
      const dir = join(root, name);
      const problem = modelNameProblem(name);
      if (problem === undefined && dirname(dir) === root && basename(dir) === name) return dir;
      throw permanentError(
        'refused',
        `refusing model dir for ${JSON.stringify(name)}: ${problem ?? 'outside the model dir'}`,
      );
    },
    /** What holds `path`, an entry of M, read without following a link; a dir on another device is a mount point. */
    inspect: (path: string): Promise<Found> =>
      step(`cannot read ${path}`, () => inspectEntry(rootDevice, path)),
    /** Creates M if missing (KServe's agent panicked on a missing one): once, or `again` when it was deleted since. */
    makeRoot: async (again = false): Promise<void> => {
      if (again) rootMade = false;
      if (rootMade) return;
      await step(`cannot create ${root}`, () => makeDirs(root));
      rootMade = true;
    },
    /** Where mkdtemp makes a staging dir of `name`. */
    stagingPrefix: (name: string): string => join(root, `${stagingPrefix}${nameTag(name)}-`),
    moveAside,
    /** Moves `path` aside, then deletes it: a crash mid-delete must not leave a marker next to half the files. */
    discard: async (path: string, name: string): Promise<void> => {
      const aside = await moveAside(path, name);
      if (aside !== undefined) await removeTree(aside);
    },
    /** Deletes `path`, logging (not throwing) a failure. */
    discardQuietly: (path: string): Promise<void> =>
      removeTree(path).catch((err: unknown) => {
        log.warn({ err, dir: path }, 'cannot delete a staging dir; recovery will');
      }),
    removeNonDir: async (found: Found & { _tag: 'NotADir' }): Promise<void> => {
      log.warn({ path: found.path, found: found.kind }, 'not a model dir; removing it');
      await removeTree(found.path);
    },
  };
};
