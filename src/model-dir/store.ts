/** modelDirStore: the model directory M, filled through staging dirs and renames so no one sees half a model, and no neighbour's link is ever followed. */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { EffectError, errorCode, permanentError } from '../core/errors';
import { modelNameProblem, type ModelName } from '../core/model-name';
import { specEquals, specToJson } from '../core/snapshot';
import type { Installed, ModelStore, Staged } from '../ports';
import { fsError, isMissing, step, type SpaceCheck, isSameEntry, removeTree, type OpenDir } from '../fs';
import { backgroundFlusher } from './background-flush';
import type { Logger } from '../log';
import { describeFound, inspectEntry, type Found } from './entry';
import { fillFromModelDir, type StagingOf } from './fill-from';
import { modelDirRecovery } from './recovery';
import { createStagingDir, markStagingDir, namingStaging, stagingTakenAway } from './staging-dir';

/** Where the store lives and where it logs. */
export interface ModelDirOptions {
  readonly root: string;
  readonly log: Logger;
  /** The disk check (`--min-free-bytes`) every install must pass before it starts; absent: none. */
  readonly spaceCheck?: SpaceCheck;
  /** `--link-same-content`: fill models of one content with hard links, not copies (`FillFromModelDir.link`). */
  readonly linkSameContent?: boolean;
}

// Reserved prefixes: model names cannot start with '.', so these never collide with a model dir.
const stagingPrefix = '.tmp-';
const asidePrefix = '.old-';

/** A short readable form of the name for temporary dir names, well inside NAME_MAX even for 255-byte names. */
const nameTag = (name: string): string => Array.from(name).slice(0, 48).join('');

const randomSuffix = (): string => randomBytes(6).toString('hex');

/** The local model directory `M` as a ModelStore; see ports.ts for the contract. */
export const modelDirStore = (options: ModelDirOptions): ModelStore => {
  const root = resolve(options.root);
  const log = options.log.child({ component: 'model-dir' });

  // Defence in depth: ModelName already refuses these, but a bad name here could delete outside M.
  const modelDir = (name: string): string => {
    const dir = join(root, name);
    const problem = modelNameProblem(name);
    if (problem !== undefined || dirname(dir) !== root || basename(dir) !== name) {
      throw permanentError(
        'refused',
        `refusing model dir for ${JSON.stringify(name)}: ${problem ?? 'outside the model dir'}`,
      );
    }
    return dir;
  };

  // The model dir's device, read once: what sits on another device is a mount point, not a model dir of ours.
  let rootDev: number | undefined;
  const rootDevice = async (): Promise<number> => (rootDev ??= (await stat(root)).dev);

  const inspect = (path: string): Promise<Found> =>
    step(`cannot read ${path}`, () => inspectEntry(rootDevice, path));

  /** Renames `path` to a fresh `.old-` sibling; undefined when there is nothing to move. */
  const moveAside = async (path: string, name: string): Promise<string | undefined> => {
    const aside = join(root, `${asidePrefix}${nameTag(name)}-${randomSuffix()}`);
    try {
      await rename(path, aside);
      return aside;
    } catch (cause) {
      if (isMissing(cause)) return undefined;
      throw fsError(`cannot move ${path} aside`, cause);
    }
  };

  /** Renames `from` to `target` if nothing but an empty dir holds `target`; false when something else does. */
  const renamedInto = async (from: string, target: string): Promise<boolean> => {
    try {
      await rename(from, target);
      return true;
    } catch (cause) {
      if (['EEXIST', 'ENOTEMPTY', 'ENOTDIR', 'EISDIR'].includes(errorCode(cause) ?? '')) return false;
      throw fsError(`cannot rename ${from} to ${target}`, cause);
    }
  };

  // Rename first, then delete: a crash mid-delete must not leave a marker next to half the files.
  const discard = async (path: string, name: string): Promise<void> => {
    const aside = await moveAside(path, name);
    if (aside !== undefined) await removeTree(aside);
  };

  const discardQuietly = async (path: string): Promise<void> => {
    try {
      await removeTree(path);
    } catch (err) {
      log.warn({ err, dir: path }, 'cannot delete a staging dir; recovery will');
    }
  };

  const removeNonDir = async (found: Found & { _tag: 'NotADir' }): Promise<void> => {
    log.warn({ path: found.path, found: found.kind }, 'not a model dir; removing it');
    await removeTree(found.path);
  };

  const flushInstalled = backgroundFlusher(root, log);

  const restore = async (replaced: string, target: string): Promise<void> => {
    try {
      await rename(replaced, target);
    } catch (err) {
      log.error({ err, dir: replaced }, 'cannot move the replaced model dir back; recovery will delete it');
    }
  };

  /** Swaps the staged dir in; the old version stays aside (and loaded files stay readable) until dropped. */
  const commit = async (
    dir: OpenDir,
    target: string,
    name: string,
    signal: AbortSignal,
    claimed: Found,
  ): Promise<Installed> => {
    signal.throwIfAborted();
    // Nothing was there at the claim: rename straight in. Something that appeared since makes the rename fail
    // (only an empty dir would be replaced), and the install moves it aside as when it was there all along.
    let replaced: string | undefined;
    const putBack = async (): Promise<void> => {
      if (replaced !== undefined) await restore(replaced, target);
    };
    if (claimed._tag !== 'Missing' || !(await renamedInto(dir.path, target))) {
      replaced = await moveAside(target, name);
      try {
        await rename(dir.path, target);
      } catch (cause) {
        await putBack();
        throw fsError(`cannot rename ${dir.path} to ${target}`, cause);
      }
    }
    // rename() moves whatever holds the staging name now: make sure that is the dir we filled.
    if (!(await step(`cannot check ${target}`, () => isSameEntry(target, dir.stats)))) {
      await discard(target, name);
      await putBack();
      throw stagingTakenAway(dir.path);
    }
    // The old version is deleted only once the new one is on disk: a power loss in between leaves one of them whole.
    const flushed = flushInstalled(target, dir.stats);
    return {
      dropReplaced: async () => {
        await flushed;
        if (replaced !== undefined) await removeTree(replaced);
      },
    };
  };

  /**
   * Makes room for `target`: refuses a dir that is not ours to replace, removes a non-dir squatting our name.
   * Returns what was found there.
   */
  const claim = async (target: string, name: ModelName): Promise<Found> => {
    const found = await inspect(target);
    if (found._tag === 'NotADir') await removeNonDir(found);
    if (found._tag === 'Dir' && found.foreign !== undefined && found.state._tag !== 'Valid') {
      throw permanentError(
        'refused',
        `cannot install model ${name}: ${target} is ${found.foreign}, not a model dir modelsync owns; choose another name`,
      );
    }
    return found;
  };

  // Made once, then trusted: a root deleted later fails the staging dir's creation, which makes it again.
  let rootMade = false;
  const makeRoot = async (): Promise<void> => {
    if (rootMade) return;
    await step(`cannot create ${root}`, () => mkdir(root, { recursive: true }));
    rootMade = true;
  };

  const createStaging = async (name: ModelName): Promise<OpenDir> => {
    const prefix = join(root, `${stagingPrefix}${nameTag(name)}-`);
    try {
      return await createStagingDir(prefix);
    } catch (cause) {
      if (!(cause instanceof EffectError) || errorCode(cause.cause) !== 'ENOENT') throw cause;
      rootMade = false;
      await makeRoot();
      return createStagingDir(prefix);
    }
  };

  /**
   * A fresh staging dir once the disk check passed. The size is not known yet (the providers check a declared one):
   * at least the reserve must be free. The check runs while the dir is made; a dir made for nothing is removed.
   */
  const stagingWithSpace = async (name: ModelName): Promise<OpenDir> => {
    const [space, staging] = await Promise.allSettled([
      options.spaceCheck?.(root, 0, `installing model ${name}`),
      createStaging(name),
    ]);
    if (space.status === 'fulfilled' && staging.status === 'fulfilled') return staging.value;
    if (staging.status === 'fulfilled') {
      await staging.value.handle.close();
      await discardQuietly(staging.value.path);
    }
    throw space.status === 'rejected' ? space.reason : (staging as PromiseRejectedResult).reason;
  };

  /** The error to report for `cause`, once the staging dir it stopped is removed (see `Staged.abandon`). */
  const failedStaging = async (dir: OpenDir, cause: unknown, signal: AbortSignal): Promise<unknown> => {
    const intact = signal.aborted || (await isSameEntry(dir.path, dir.stats).catch(() => false));
    await discardQuietly(dir.path);
    if (!intact && !(cause instanceof EffectError && cause.retryable))
      return stagingTakenAway(dir.path, cause);
    return namingStaging(cause, dir);
  };

  /** The staging dirs handed out and not yet committed or abandoned, for `fillFrom`. */
  const openStagings = new WeakMap<Staged, StagingOf>();

  const stage: ModelStore['stage'] = async (name, spec, signal) => {
    const target = modelDir(name);
    signal.throwIfAborted();
    await makeRoot();
    const claimed = await claim(target, name);
    const dir = await stagingWithSpace(name);
    const settle = async <T>(run: () => Promise<T>): Promise<T> => {
      openStagings.delete(staged);
      try {
        return await run();
      } finally {
        await dir.handle.close();
      }
    };
    const staged: Staged = {
      dir: dir.ref,
      commit: () =>
        settle(async () => {
          try {
            await markStagingDir(dir, { name, spec, signal, log });
            const installed = await commit(dir, target, name, signal, claimed);
            log.debug({ model: name, dir: target, spec: specToJson(spec) }, 'model dir installed');
            return installed;
          } catch (cause) {
            throw await failedStaging(dir, cause, signal);
          }
        }),
      abandon: (cause) =>
        settle(() =>
          failedStaging(
            dir,
            signal.aborted ? cause : fsError(`cannot write the model into ${dir.path}`, cause),
            signal,
          ),
        ),
    };
    openStagings.set(staged, { name, spec, target: dir });
    return staged;
  };

  const fillFrom: ModelStore['fillFrom'] = async (source, staged, signal) => {
    const into = openStagings.get(staged);
    if (into === undefined) throw new Error('fillFrom: not a staging dir of this store, or already settled');
    const { spaceCheck, linkSameContent: link = false } = options;
    return fillFromModelDir({ ...into, source, path: modelDir(source), signal, log, spaceCheck, link });
  };

  const remove: ModelStore['remove'] = async (name) => {
    const path = modelDir(name);
    const found = await inspect(path);
    if (found._tag === 'Dir' && found.foreign !== undefined && found.state._tag !== 'Valid') {
      log.debug({ dir: path, found: found.foreign }, 'not a model dir modelsync owns; leaving it');
      return;
    }
    await discard(path, name);
  };

  const isInstalled: ModelStore['isInstalled'] = async (name, spec) => {
    const path = modelDir(name);
    const found = await inspect(path);
    if (found._tag === 'Dir' && found.state._tag === 'Valid' && specEquals(found.state.spec, spec))
      return true;
    log.warn(
      { model: name, dir: path, found: describeFound(found) },
      'model dir is not as installed; it will be installed again',
    );
    return false;
  };

  const recover = modelDirRecovery({
    root,
    log,
    makeRoot,
    inspect,
    discard,
    discardQuietly,
    removeNonDir,
    isTemporary: (entry) => entry.startsWith(stagingPrefix) || entry.startsWith(asidePrefix),
  });

  return { recover, stage, remove, isInstalled, fillFrom };
};
