/** The model dir M itself: each model's path in it, what holds a name, temporary names, moving aside and deleting. */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { permanentError } from '../core/errors';
import { modelNameProblem } from '../core/model-name';
import { fsError, isMissing, removeTree, step } from '../fs';
import type { Logger } from '../log';
import { inspectEntry, type Found } from './entry';

// Reserved prefixes: model names cannot start with '.', so these never collide with a model dir.
const stagingPrefix = '.tmp-';
const asidePrefix = '.old-';

/** A short readable form of the name for temporary dir names, well inside NAME_MAX even for 255-byte names. */
const nameTag = (name: string): string => Array.from(name).slice(0, 48).join('');

/** True for the store's staging and move-aside dirs. */
export const isTemporary = (entry: string): boolean =>
  entry.startsWith(stagingPrefix) || entry.startsWith(asidePrefix);

/** M as the store, the staging, the swap and recovery act on it. */
export interface ModelDirRoot {
  readonly root: string;
  readonly log: Logger;
  /** `M/<name>`; refused (defence in depth: ModelName already refuses such names) when it would reach outside M. */
  readonly modelDir: (name: string) => string;
  /** What holds `path`, an entry of M, read without following a link; a dir on another device is a mount point. */
  readonly inspect: (path: string) => Promise<Found>;
  /** Creates M if missing (KServe's agent panicked on a missing one): once, or `again` when it was deleted since. */
  readonly makeRoot: (again?: boolean) => Promise<void>;
  /** Where mkdtemp makes a staging dir of `name`. */
  readonly stagingPrefix: (name: string) => string;
  /** Renames `path` to a fresh `.old-` sibling; undefined when there is nothing to move. */
  readonly moveAside: (path: string, name: string) => Promise<string | undefined>;
  /** Moves `path` aside, then deletes it. */
  readonly discard: (path: string, name: string) => Promise<void>;
  /** Deletes `path`, logging (not throwing) a failure. */
  readonly discardQuietly: (path: string) => Promise<void>;
  readonly removeNonDir: (found: Found & { _tag: 'NotADir' }) => Promise<void>;
}

export const modelDirRoot = (path: string, log: Logger): ModelDirRoot => {
  const root = resolve(path);
  // M's device, read once: what sits on another device is a mount point, not a model dir of ours.
  let rootDev: number | undefined;
  const rootDevice = async (): Promise<number> => (rootDev ??= (await stat(root)).dev);
  // Made once, then trusted: a root deleted later fails the staging dir's creation, which makes it again.
  let rootMade = false;

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
    modelDir: (name) => {
      const dir = join(root, name);
      const problem = modelNameProblem(name);
      if (problem === undefined && dirname(dir) === root && basename(dir) === name) return dir;
      throw permanentError(
        'refused',
        `refusing model dir for ${JSON.stringify(name)}: ${problem ?? 'outside the model dir'}`,
      );
    },
    inspect: (path) => step(`cannot read ${path}`, () => inspectEntry(rootDevice, path)),
    makeRoot: async (again = false) => {
      if (again) rootMade = false;
      if (rootMade) return;
      await step(`cannot create ${root}`, () => mkdir(root, { recursive: true }));
      rootMade = true;
    },
    stagingPrefix: (name) => join(root, `${stagingPrefix}${nameTag(name)}-`),
    moveAside,
    // Rename first, then delete: a crash mid-delete must not leave a marker next to half the files.
    discard: async (path, name) => {
      const aside = await moveAside(path, name);
      if (aside !== undefined) await removeTree(aside);
    },
    discardQuietly: async (path) => {
      try {
        await removeTree(path);
      } catch (err) {
        log.warn({ err, dir: path }, 'cannot delete a staging dir; recovery will');
      }
    },
    removeNonDir: async (found) => {
      log.warn({ path: found.path, found: found.kind }, 'not a model dir; removing it');
      await removeTree(found.path);
    },
  };
};
