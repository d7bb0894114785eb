/** placedPaths: where each listed file of a model lands in its model dir, every path checked before any byte is fetched. */
import { entryPathOf } from './archive/guard';

/** One listed file: the path it was listed under, and what messages call it (a repo path, an object key). */
export interface Listed {
  readonly name: string;
  readonly shown: string;
}

/**
 * The `/`-separated path in the model dir of each of `listed`, in order, every name passing entryPathOf; no two may
 * take one path, nor one a path another takes as a dir (`a` and `a/b`). `refuse(shown, why)` throws the caller's
 * error; `noun` says what the files are ("file", "object").
 */
export const placedPaths = (
  listed: ReadonlyArray<Listed>,
  noun: string,
  refuse: (shown: string, why: string) => never,
): string[] => {
  const files = new Map<string, string>();
  const dirs = new Map<string, string>();
  return listed.map(({ name, shown }) => {
    const refuseThis = (why: string): never => refuse(shown, why);
    const to = entryPathOf(name, refuseThis);
    if (to === '') refuseThis('it names the model dir itself');
    const other = files.get(to) ?? dirs.get(to);
    if (other !== undefined) refuseThis(`${JSON.stringify(other)} needs the same path, ${to}`);
    const parts = to.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      const file = files.get(dir);
      if (file !== undefined)
        refuseThis(`it would be saved under ${dir}, which is the ${noun} ${JSON.stringify(file)}`);
      dirs.set(dir, shown);
    }
    files.set(to, shown);
    return to;
  });
};
