/** durable-fs: the file-system steps the model dir and the load journal share — errors that say what failed, fsync, bounded fan-out. */
import { open } from 'node:fs/promises';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EffectError, errorCode, errorMessage, permanentError, retryableError } from '../core/errors';

// A full disk or EIO may pass; a permission or a path that cannot be a dir will not.
const permanentCodes = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP']);

/** An fs failure as an EffectError naming what we were doing; a full disk or EIO may pass, EACCES will not. */
export const fsError = (what: string, cause: unknown): unknown => {
  const code = errorCode(cause);
  if (code === undefined || cause instanceof EffectError) return cause;
  const message = `${what}: ${errorMessage(cause)}`;
  return permanentCodes.has(code) ? permanentError(message, cause) : retryableError(message, cause);
};

/** Runs `run`, turning an fs failure into an EffectError that names `what`. */
export const step = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
  try {
    return await run();
  } catch (cause) {
    throw fsError(what, cause);
  }
};

/** True for the errors of a path that is not there. */
export const isMissing = (cause: unknown): boolean => ['ENOENT', 'ENOTDIR'].includes(errorCode(cause) ?? '');

/** Runs `run` over `items`, at most `limit` at a time; the first failure is thrown once all running ones end. */
export const forEachLimited = async <T>(
  items: ReadonlyArray<T>,
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> => {
  let next = 0;
  let failure: { cause: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await run(item);
      } catch (cause) {
        failure ??= { cause };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.cause;
};

/** fsyncs a file or a directory. */
export const syncPath = (path: string): Promise<void> =>
  step(`cannot flush ${path}`, async () => {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  });

// Bounds the open file descriptors while flushing a model of many files.
const syncConcurrency = 16;

/** Files and dirs under `dir` (dirs include `dir`); symlinks are left to their dir's fsync. */
const walk = async (
  dir: string,
  files: string[] = [],
  dirs: string[] = [],
): Promise<[string[], string[]]> => {
  dirs.push(dir);
  const entries = await step(`cannot list ${dir}`, () => readdir(dir, { withFileTypes: true }));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await walk(path, files, dirs);
    else if (entry.isFile()) files.push(path);
  }
  return [files, dirs];
};

/** fsyncs every file, then every dir, of a tree: data before the marker, so a marker only ever sits beside complete files. */
export const syncTree = async (dir: string): Promise<void> => {
  const [files, dirs] = await walk(dir);
  await forEachLimited(files, syncConcurrency, syncPath);
  await forEachLimited(dirs, syncConcurrency, syncPath);
};
