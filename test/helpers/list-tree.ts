/** listTree: what a directory holds, as sorted relative paths, for tests of the storage edges. */
import { readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

/** Every path under `dir`, relative, sorted; directories end in '/', symlinks show their target. */
export const listTree = async (dir: string): Promise<string[]> => {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const rel = path.relative(dir, full);
    if (entry.isDirectory()) out.push(`${rel}/`);
    else if (entry.isSymbolicLink()) out.push(`${rel} -> ${await readlink(full)}`);
    else out.push(rel);
  }
  return out.sort();
};
