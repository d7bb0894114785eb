/** makeDirs: `mkdir -p` whose failure names the errno that stopped it. */
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { errorCode } from '../core/errors';

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** The failure of a plain mkdir of the first dir missing on the way to `path`, when it is not ENOENT or EEXIST. */
const plainFailure = async (path: string, mode: number | undefined): Promise<unknown> => {
  let missing = resolve(path);
  for (let parent = dirname(missing); parent !== missing && !(await exists(parent)); parent = dirname(parent))
    missing = parent;
  const failure = await mkdir(missing, mode).then(
    () => undefined,
    (cause: unknown) => cause,
  );
  return ['ENOENT', 'EEXIST'].includes(errorCode(failure) ?? '') ? undefined : failure;
};

/**
 * Makes `path` and its missing parents. Node's recursive mkdir reports an errno it does not expect (EROFS, EDQUOT)
 * as ENOENT, its stat's answer for the dir it could not make: a model dir missing on a read-only volume said "no such
 * file or directory". Its ENOENT is checked by a plain mkdir of the first missing dir, whose failure is the one told.
 */
export const makeDirs = async (path: string, mode?: number): Promise<void> => {
  try {
    await mkdir(path, { recursive: true, ...(mode === undefined ? {} : { mode }) });
  } catch (cause) {
    if (errorCode(cause) !== 'ENOENT') throw cause;
    throw (await plainFailure(path, mode)) ?? cause;
  }
};
