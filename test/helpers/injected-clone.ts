/**
 * A stand-in for the file system's clone (`copyFile` with COPYFILE_FICLONE_FORCE), which ext4 and tmpfs lack: a test
 * file mocks `node:fs/promises` with `withInjectedClone()`, then says what each clone does in `injectedClone`.
 */
import type * as fsPromises from 'node:fs/promises';

/** What a clone to `to` does: `clone` (copies, as a reflink would), `real` (asks the file system), or fail with a code. */
export const injectedClone = {
  outcome: (_to: string): string => 'clone',
  attempts: 0,
};

/** `node:fs/promises` with its clones done as `injectedClone` says: for `jest.mock('node:fs/promises', …)`. */
export const withInjectedClone = (): typeof fsPromises => {
  const actual = jest.requireActual<typeof fsPromises>('node:fs/promises');
  const force = jest.requireActual<typeof import('node:fs')>('node:fs').constants.COPYFILE_FICLONE_FORCE;
  const copyFile: typeof actual.copyFile = async (from, to, mode = 0) => {
    if ((mode & force) === 0) return actual.copyFile(from, to, mode);
    injectedClone.attempts++;
    const outcome = injectedClone.outcome(String(to));
    if (outcome === 'clone') return actual.copyFile(from, to, mode & ~force);
    if (outcome === 'real') return actual.copyFile(from, to, mode);
    throw Object.assign(new Error(`${outcome}: clone refused`), { code: outcome });
  };
  return { ...actual, copyFile };
};
