/**
 * linkMissing: what one dir tree holds and another lacks, made there without copying a byte — a file hard-linked, a
 * dir made, a symbolic link made again as the link it is (never followed). Where both hold a name, `into`'s stays.
 */
import { link, lstat, mkdir, readdir, readlink, symlink } from 'node:fs/promises';
import { isMissing } from './durable-fs';

/** Links into `into` every entry of the tree `from` that `into` lacks, at the same place (both dirs, one file system). */
export const linkMissing = async (from: string, into: string): Promise<void> => {
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = `${from}/${entry.name}`;
    const target = `${into}/${entry.name}`;
    const there = await lstat(target).catch((cause: unknown) => {
      if (isMissing(cause)) return undefined;
      throw cause;
    });
    if (entry.isDirectory()) {
      if (there === undefined) await mkdir(target);
      if (there === undefined || there.isDirectory()) await linkMissing(source, target);
    } else if (there === undefined) {
      if (entry.isSymbolicLink()) await symlink(await readlink(source), target);
      else if (entry.isFile()) await link(source, target);
    }
  }
};
