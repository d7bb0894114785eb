/** What holds a name in the model dir: nothing, something that is no dir (a link, a file, a FIFO), or a real dir and its markers. */
import { lstat } from 'node:fs/promises';
import { basename } from 'node:path';
import { errorCode } from '../core/errors';
import { isMissing, entryKind, withDir } from '../fs';
import { readDirState, type DirState } from './marker-file';

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
export const inspectEntry = async (rootDevice: () => Promise<number>, path: string): Promise<Found> => {
  let info;
  try {
    info = await lstat(path);
  } catch (cause) {
    if (isMissing(cause)) return { _tag: 'Missing' };
    throw cause;
  }
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
};

/** What was found, in words for a log line (when it is not the model expected). */
export const describeFound = (found: Found): string => {
  if (found._tag === 'Missing') return 'nothing';
  return found._tag === 'NotADir' ? found.kind : stateWords[found.state._tag];
};
