/** stager (`ModelStore.stage`): a fresh staging dir for one model, settled once: marked and swapped in, or abandoned. */
import { EffectError, errorCode, permanentError } from '../core/errors';
import type { ModelName } from '../core/model-name';
import { shownSpecJson } from '../core/snapshot';
import {
  fsError,
  installing,
  isSameEntry,
  namingDirs,
  quick,
  removeTree,
  step,
  type MountWatch,
  type OpenDir,
  type SpaceCheck,
} from '../fs';
import type { Installed, ModelFiles, ModelStore, Staged, WrittenFiles } from '../ports';
import type { FlushInstalled } from './background-flush';
import type { StagingOf } from './fill-from';
import type { Found, ModelDirRoot } from './model-dir-root';
import { createStagingDir, markStagingDir, stagingTakenAway } from './staging-dir';

/** Where a store stages: its model dir, its flusher, its disk check, and the staging dirs not yet settled. */
export interface StagingArea {
  readonly m: ModelDirRoot;
  readonly flush: FlushInstalled;
  /** The disk check every install must pass before it starts; absent: none. */
  readonly spaceCheck?: SpaceCheck;
  /** The staging dirs handed out and not yet committed or abandoned, for `fillFrom`. */
  readonly open: WeakMap<Staged, StagingOf>;
  /** What a staged dir's calls run under (the store's calls do too): none waits for good on a hung mount. */
  readonly watch: MountWatch;
}

/** Makes room for `target`: refuses a dir that is not ours to replace, removes a non-dir squatting our name. */
const claim = async (m: ModelDirRoot, target: string, name: ModelName): Promise<Found> => {
  const found = await m.inspect(target);
  if (found._tag === 'NotADir') await m.removeNonDir(found);
  if (found._tag === 'Dir' && found.foreign !== undefined && found.state._tag !== 'Valid')
    throw permanentError(
      'refused',
      `cannot install model ${name}: ${target} is ${found.foreign}, not a model dir modelsync owns; choose another name`,
    );
  return found;
};

const createStaging = async (m: ModelDirRoot, name: ModelName): Promise<OpenDir> => {
  try {
    return await createStagingDir(m.stagingPrefix(name));
  } catch (cause) {
    if (!(cause instanceof EffectError) || errorCode(cause.cause) !== 'ENOENT') throw cause;
    await m.makeRoot(true);
    return createStagingDir(m.stagingPrefix(name));
  }
};

/** The error to report for a `cause` that stopped `dir`, once the dir is removed (see `Staged.abandon`). */
const failedStaging =
  (m: ModelDirRoot, dir: OpenDir, signal: AbortSignal) =>
  async (cause: unknown): Promise<unknown> => {
    const intact = signal.aborted || (await isSameEntry(dir.path, dir.stats).catch(() => false));
    await m.discardQuietly(dir.path);
    if (!intact && !(cause instanceof EffectError && cause.retryable))
      return stagingTakenAway(dir.path, cause);
    return namingDirs(cause, [dir]);
  };

/** Renames `from` to `target` if nothing but an empty dir holds `target`; false when something else does. */
const renamedInto = async (from: string, target: string): Promise<boolean> => {
  try {
    await quick.rename(from, target);
    return true;
  } catch (cause) {
    if (['EEXIST', 'ENOTEMPTY', 'ENOTDIR', 'EISDIR'].includes(errorCode(cause) ?? '')) return false;
    throw fsError(`cannot rename ${from} to ${target}`, cause);
  }
};

/**
 * Swaps the staged `dir` in at `target` (`M/<name>`, `claimed` what held it when the install began); the old version
 * stays aside (and loaded files stay readable) until dropped, and is deleted only once the new one is flushed: a
 * power loss in between leaves one of them whole.
 */
const swapIn = async (
  { m, flush, watch }: StagingArea,
  dir: OpenDir,
  target: string,
  name: ModelName,
  claimed: Found,
  files: ReadonlyArray<string>,
): Promise<Installed> => {
  // Nothing was there at the claim: rename straight in. Something that appeared since makes the rename fail
  // (only an empty dir would be replaced), and the install moves it aside as when it was there all along.
  let replaced: string | undefined;
  const putBack = async (): Promise<void> => {
    if (replaced === undefined) return;
    await quick
      .rename(replaced, target)
      .catch((err: unknown) =>
        m.log.error(
          { err, dir: replaced },
          'cannot move the replaced model dir back; recovery will delete it',
        ),
      );
  };
  if (claimed._tag !== 'Missing' || !(await renamedInto(dir.path, target))) {
    replaced = await m.moveAside(target, name);
    try {
      await quick.rename(dir.path, target);
    } catch (cause) {
      await putBack();
      throw fsError(`cannot rename ${dir.path} to ${target}`, cause);
    }
  }
  // rename() moves whatever holds the staging name now: make sure that is the dir we filled.
  if (!(await step(`cannot check ${target}`, () => isSameEntry(target, dir.stats)))) {
    await m.discard(target, name);
    await putBack();
    throw stagingTakenAway(dir.path);
  }
  // Only a replaced version waits for the flush (it is deleted once the new one is on disk): its batch goes at once.
  const flushed = flush(target, dir.stats, files, replaced !== undefined);
  return {
    dropReplaced: () =>
      watch(async () => {
        if (replaced === undefined) return;
        await flushed;
        await removeTree(replaced);
      }),
  };
};

/**
 * `ModelStore.stage` in `area`: a staging dir once nothing that is not ours to replace holds `M/<name>` and the disk
 * check passed (the size is not known yet, the providers check a declared one: at least the reserve must be free).
 * The claim, the check and the staging dir run at once (each fs call is a round trip through libuv's pool, on a
 * load's path); a staging dir made for nothing is removed.
 */
export const stager =
  (area: StagingArea): ModelStore['stage'] =>
  async (name, spec, signal) => {
    const { m, open, spaceCheck, watch } = area;
    const target = m.modelDir(name);
    signal.throwIfAborted();
    // Until the staging dir is settled: while others are under way too, its files are created through the pool.
    const ended = installing();
    await m.makeRoot().catch((cause: unknown) => {
      ended();
      throw cause;
    });
    const [claimed, space, staging] = await Promise.allSettled([
      claim(m, target, name),
      spaceCheck?.(m.root, 0, `installing model ${name}`),
      createStaging(m, name),
    ]);
    if (claimed.status === 'rejected' || space.status === 'rejected' || staging.status === 'rejected') {
      ended();
      if (staging.status === 'fulfilled') {
        await staging.value.handle.close();
        await m.discardQuietly(staging.value.path);
      }
      throw [claimed, space, staging].find(
        (result): result is PromiseRejectedResult => result.status === 'rejected',
      )?.reason;
    }
    const dir = staging.value;
    const failed = failedStaging(m, dir, signal);
    const settle = async <T>(run: () => Promise<T>): Promise<T> => {
      open.delete(staged);
      try {
        return await run();
      } finally {
        ended();
        // Not waited for: nothing after the install needs the descriptor gone, and a close does not fail usefully.
        void dir.handle.close().catch(() => undefined);
      }
    };
    const commit = async (
      beforeSwap?: Promise<unknown>,
      written?: WrittenFiles,
      vet?: (files: ModelFiles) => Promise<void>,
    ): Promise<Installed> => {
      try {
        const [files] = await Promise.all([
          markStagingDir(dir, { name, spec, signal, log: m.log, written, vet }),
          beforeSwap,
        ]);
        signal.throwIfAborted();
        const installed = await swapIn(area, dir, target, name, claimed.value, files);
        m.log.debug({ model: name, dir: target, spec: shownSpecJson(spec) }, 'model dir installed');
        return installed;
      } catch (cause) {
        throw await failed(cause);
      }
    };
    const staged: Staged = {
      dir: dir.ref,
      filling: async (outer, fill) => {
        const cut = new AbortController();
        const outcome = await watch(
          () =>
            fill(AbortSignal.any([outer, cut.signal])).then(
              (value) => ({ value }),
              (error: unknown) => ({ error }),
            ),
          // Back after the mount was found hung (it answered since): nothing commits this dir now, and the abandon
          // made meanwhile failed at once.
          () => void settle(() => m.discardQuietly(dir.path)),
        ).catch((cause: unknown) => {
          // Found hung while the fill waits on the mount: its request to the storage goes now, its writes (and their
          // threads) once the mount answers.
          cut.abort(cause);
          throw cause;
        });
        if ('error' in outcome) throw outcome.error;
        return outcome.value;
      },
      commit: (beforeSwap, written, vet) => watch(() => settle(() => commit(beforeSwap, written, vet))),
      abandon: (cause) =>
        watch(() =>
          settle(() =>
            failed(signal.aborted ? cause : fsError(`cannot write the model into ${dir.path}`, cause)),
          ),
        ),
    };
    open.set(staged, { name, spec, target: dir });
    return staged;
  };
