/** A sentinel dir outside the model dir: files a hostile neighbour would aim modelsync at, and a digest to prove they were not touched. */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { listTree, writeFiles } from '../../helpers/file-tree';

/** Files named like what modelsync writes (a model, a marker, a journal entry), so a followed link hits them. */
export const sentinelFiles: Readonly<Record<string, string>> = {
  victim: 'precious: must survive',
  'model.bin': 'not a model',
  'SUCCESS.0000': '{"storageUri":"file:///etc","framework":"sklearn","memory":"1Mi"}',
  'sub/deep.txt': 'deep file',
  '.modelsync-journal': 'not a journal',
};

/** Every path under `dir` with its mode and content (or link target): equal digests mean nothing changed. */
export const treeDigest = async (dir: string): Promise<string> => {
  const hash = createHash('sha256');
  for (const path of await listTree(dir)) {
    const full = join(dir, path.replace(/ -> .*$/, '').replace(/\/$/, ''));
    const info = await lstat(full);
    hash.update(`${path}\0${info.mode}\0${info.size}\0`);
    if (info.isFile()) hash.update(await readFile(full));
    else if (info.isSymbolicLink()) hash.update(await readlink(full));
  }
  return hash.digest('hex');
};

/** A sentinel dir at `dir`, and a check that it is exactly as made. */
export interface Sentinel {
  readonly dir: string;
  /** Resolves when the dir holds the same paths, modes and contents as when it was made; rejects naming the change. */
  readonly expectUntouched: () => Promise<void>;
}

/** Creates the sentinel dir `dir` with `sentinelFiles` and records its digest. */
export const makeSentinel = async (dir: string): Promise<Sentinel> => {
  await writeFiles(dir, sentinelFiles);
  const before = await treeDigest(dir);
  const listing = await listTree(dir);
  return {
    dir,
    expectUntouched: async () => {
      const after = await listTree(dir).catch((error: unknown) => [`cannot list: ${String(error)}`]);
      if ((await treeDigest(dir).catch(() => 'gone')) !== before) {
        throw new Error(`the sentinel dir ${dir} changed: was ${listing.join(', ')}; is ${after.join(', ')}`);
      }
    },
  };
};

/** Creates a FIFO at `path`: what a neighbour plants where a file is expected, to make an open() block. */
export const makeFifo = async (path: string): Promise<void> => {
  await promisify(execFile)('mkfifo', [path]);
};
