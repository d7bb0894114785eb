/** loneArchiveIn: the archive a local dir holds and nothing else, which KServe's initializer unpacks as it would the file. */
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { archiveFormatOf } from '../archive/extract';
import { checkLocalSource } from './local-roots';

/**
 * The real path and the name of the one entry of `dir` when it is a regular file named as an archive (`.tar`, `.tar.gz`, `.tgz`,
 * `.zip`, …) and lies in `roots` once resolved (`what` and `rootsName` name a refusal), else undefined: a dir holding
 * anything beside it, or a link, is copied as it is. KServe's initializer extracts a local dir's only archive too.
 */
export const loneArchiveIn = async (
  dir: string,
  { roots, rootsName }: { readonly roots: ReadonlyArray<string>; readonly rootsName: string },
  what: string,
): Promise<{ readonly file: string; readonly name: string } | undefined> => {
  const entries = await readdir(dir, { withFileTypes: true });
  const only = entries.length === 1 ? entries[0]! : undefined;
  if (only === undefined || !only.isFile() || archiveFormatOf(only.name) === undefined) return undefined;
  // Swapped for a link since the listing, it is followed only to where a source may lie.
  const file = await realpath(path.join(dir, only.name));
  await checkLocalSource(file, roots, what, rootsName);
  return { file, name: only.name };
};
