/** swapIn: a marked staging dir renamed into place as `M/<name>`, the version it replaces kept aside until dropped. */
import { rename } from 'node:fs/promises';
import { errorCode } from '../core/errors';
import { fsError, isSameEntry, removeTree, step, type OpenDir } from '../fs';
import type { Installed } from '../ports';
import type { FlushInstalled } from './background-flush';
import type { Found } from './entry';
import type { ModelDirRoot } from './model-dir-root';
import { stagingTakenAway } from './staging-dir';

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

/** Where the swap of one staging dir goes: `target` (`M/<name>`), and what held it when the install began. */
export interface SwapTarget {
  readonly target: string;
  readonly name: string;
  readonly claimed: Found;
}

/**
 * Swaps the staged `dir` in; the old version stays aside (and loaded files stay readable) until dropped, and is
 * deleted only once the new one is flushed: a power loss in between leaves one of them whole.
 */
export const swapIn = async (
  m: ModelDirRoot,
  flush: FlushInstalled,
  dir: OpenDir,
  { target, name, claimed }: SwapTarget,
): Promise<Installed> => {
  // Nothing was there at the claim: rename straight in. Something that appeared since makes the rename fail
  // (only an empty dir would be replaced), and the install moves it aside as when it was there all along.
  let replaced: string | undefined;
  const putBack = async (): Promise<void> => {
    if (replaced === undefined) return;
    await rename(replaced, target).catch((err: unknown) =>
      m.log.error({ err, dir: replaced }, 'cannot move the replaced model dir back; recovery will delete it'),
    );
  };
  if (claimed._tag !== 'Missing' || !(await renamedInto(dir.path, target))) {
    replaced = await m.moveAside(target, name);
    try {
      await rename(dir.path, target);
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
  const flushed = flush(target, dir.stats);
  return {
    dropReplaced: async () => {
      await flushed;
      if (replaced !== undefined) await removeTree(replaced);
    },
  };
};
