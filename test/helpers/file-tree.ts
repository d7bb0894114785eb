/** File trees in tests: lay one out from a record of paths and contents, list what a directory holds, test a path. */
import { chmod, lstat, mkdir, open, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Writes each `files` entry (a relative path, directories made as needed) under `dir`. */
export const writeFiles = async (
  dir: string,
  files: Readonly<Record<string, string | Buffer>>,
): Promise<void> => {
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
};

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

/** The bytes of every regular file under `dir`, by relative path. */
export const readFileBytes = async (dir: string): Promise<Record<string, Buffer>> => {
  const files: Record<string, Buffer> = {};
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[path.relative(dir, full)] = await readFile(full);
  }
  return files;
};

/** The text of every regular file under `dir`, by relative path (what writeFiles would lay out again). */
export const readFiles = async (dir: string): Promise<Record<string, string>> =>
  Object.fromEntries(
    Object.entries(await readFileBytes(dir)).map(([file, bytes]) => [file, bytes.toString('utf8')]),
  );

/** Whether something is at `path` (a link counts as it is, even one pointing nowhere). */
export const exists = (path: string): Promise<boolean> =>
  lstat(path).then(
    () => true,
    () => false,
  );

/**
 * What a model server running as a file's owner can do to any model file it reaches, read-only or not: make it
 * writable again (chmod), then write over its bytes in place, its size unchanged (no size check can see it).
 */
export const overwriteInPlace = async (file: string): Promise<void> => {
  await chmod(file, 0o444);
  await chmod(file, 0o644);
  const handle = await open(file, 'r+');
  try {
    const { size } = await handle.stat();
    await handle.write(Buffer.alloc(size, '!'), 0, size, 0);
  } finally {
    await handle.close();
  }
};
