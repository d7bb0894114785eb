/**
 * fillFromModelDir: a staging dir filled from an installed model of the same stored content, each file its marker
 * lists copied, cloned or hard linked (`link`), and checked; every step by held handle, no link followed.
 */
import { link, lstat, mkdir, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../core/errors';
import { selectionKey } from '../core/file-selection';
import { manifestDirs, type FileManifest } from '../core/marker';
import type { ModelSpec } from '../core/model-config';
import type { ModelName } from '../core/model-name';
import type { Filled } from '../ports';
import {
  entryKind,
  fileCopier,
  forEachLimited,
  fsError,
  openDir,
  readNoFollow,
  removeTree,
  step,
  type FileCopier,
  type OpenDir,
  type SpaceCheck,
} from '../fs';
import type { Logger } from '../log';
import { isMarkerName, readDirState } from './marker-file';

/** Why a model dir cannot be filled from: the fill stops, the staging dir is emptied and the model downloaded. */
class NotASource extends Error {}

// A source entry that is gone, replaced by a link or a file, or not ours to read is no source: not a failure.
const staleCodes = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES']);
// link() is refused across file systems (EXDEV), by protected_hardlinks or a file system without hard links
// (EPERM, ENOTSUP) and past a file's most links (EMLINK): a copy does instead.
const copyCodes = new Set(['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP', 'EOPNOTSUPP']);
// As a provider makes them for the model server, which usually runs as another user.
const subdirMode = 0o755;
const fanOut = 16;

/** Runs `run` on the source; a stale entry becomes NotASource, any other failure an fs EffectError. */
const fromSource = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
  try {
    return await run();
  } catch (cause) {
    const code = errorCode(cause);
    if (code !== undefined && staleCodes.has(code)) throw new NotASource(`${what}: ${code}`);
    throw fsError(`cannot read ${what}`, cause);
  }
};

/** True when the two specs name the same stored content: the same URI and the same files of it. */
const sameContent = (a: ModelSpec, b: ModelSpec): boolean =>
  a.storageUri === b.storageUri && selectionKey(a.selection) === selectionKey(b.selection);

type OpenChild = (parent: OpenDir, part: string) => Promise<OpenDir>;

const openSourceChild: OpenChild = async (parent, part) => {
  const path = join(parent.path, part);
  return { ...(await fromSource(path, () => openDir(`${parent.ref}/${part}`))), path };
};

const makeTargetChild: OpenChild = (parent, part) => {
  const path = join(parent.path, part);
  return step(`cannot create ${path}`, async () => {
    await mkdir(`${parent.ref}/${part}`, subdirMode).catch((cause: unknown) => {
      if (errorCode(cause) !== 'EEXIST') throw cause; // made for an earlier file of this dir
    });
    return { ...(await openDir(`${parent.ref}/${part}`)), path };
  });
};

/** Runs `use` on the dir `parts` below `root`, each level opened from the one above by handle. */
const withSubdir = async <T>(
  root: OpenDir,
  parts: ReadonlyArray<string>,
  openChild: OpenChild,
  use: (dir: OpenDir) => Promise<T>,
): Promise<T> => {
  const [first, ...rest] = parts;
  if (first === undefined) return use(root);
  const child = await openChild(root, first);
  try {
    return await withSubdir(child, rest, openChild, use);
  } finally {
    await child.handle.close();
  }
};

/** How a fill places each file: hard links when they are safe (see `FillFromModelDir.link`), else copies. */
interface Placing {
  readonly link: boolean;
  readonly copy: FileCopier;
  readonly signal: AbortSignal;
}

/** Links the checked file `base` of `from` into `to`; false when the file system refuses the link. */
const linked = async (
  from: OpenDir,
  to: OpenDir,
  base: string,
  info: { dev: number; ino: number },
): Promise<boolean> => {
  const [path, placed, into] = [join(from.path, base), join(to.path, base), `${to.ref}/${base}`];
  try {
    await link(`${from.ref}/${base}`, into);
  } catch (cause) {
    const code = errorCode(cause) ?? '';
    if (staleCodes.has(code)) throw new NotASource(`${path}: ${code}`);
    if (copyCodes.has(code)) return false;
    throw fsError(`cannot link ${path} to ${placed}`, cause);
  }
  // link() takes whatever holds the name at that moment (a link is linked itself, not followed): it must be the
  // file checked above.
  const now = await step(`cannot read ${placed}`, () => lstat(into));
  if (now.dev !== info.dev || now.ino !== info.ino)
    throw new NotASource(`${path} was replaced while it was linked`);
  return true;
};

/** Puts the file `base` of `from` into `to`: the very file checked, of `size` bytes, linked, cloned or copied. */
const placeFile = async (
  from: OpenDir,
  to: OpenDir,
  [base, size]: readonly [string, number],
  placing: Placing,
): Promise<'linked' | 'cloned' | 'copied'> => {
  const [path, placed] = [join(from.path, base), join(to.path, base)];
  const handle = await fromSource(path, () => open(`${from.ref}/${base}`, readNoFollow));
  try {
    const info = await step(`cannot read ${path}`, () => handle.stat());
    if (!info.isFile()) throw new NotASource(`${path} is ${entryKind(info)}`);
    if (info.size !== size) throw new NotASource(`${path} has ${info.size} bytes, its marker says ${size}`);
    if (placing.link && (await linked(from, to, base, info))) return 'linked';
    // Read through the handle checked above, not through whatever holds the name now.
    const what = `cannot copy ${path} to ${placed}`;
    const copied = await placing.copy({
      handle,
      size,
      path,
      to: `${to.ref}/${base}`,
      signal: placing.signal,
      what,
    });
    if (copied.bytes !== size) throw new NotASource(`${path} changed while it was copied`);
    return copied.how;
  } finally {
    await handle.close();
  }
};

/** The manifest's files by the dir that holds them (`''` for the top), sorted, each as [name, size]. */
const byDir = (
  files: FileManifest,
): ReadonlyArray<readonly [string, ReadonlyArray<readonly [string, number]>]> => {
  const dirs = new Map<string, Array<readonly [string, number]>>();
  for (const [path, size] of files) {
    const cut = path.lastIndexOf('/');
    const [dir, base] = cut === -1 ? ['', path] : [path.slice(0, cut), path.slice(cut + 1)];
    const entries = dirs.get(dir) ?? dirs.set(dir, []).get(dir)!;
    entries.push([base, size]);
  }
  return [...dirs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
};

/**
 * Refuses a source that holds what its marker cannot list, which a fill would leave out: a symlink (an archive's
 * `latest -> 1`) or an empty dir where the manifest names no file or dir. Such a model is downloaded instead. What
 * holds a listed path is left to the fill's own checks.
 */
const checkNothingUnlisted = async (
  dir: OpenDir,
  files: FileManifest,
  dirs: ReadonlySet<string>,
  prefix = '',
): Promise<void> => {
  const listed = (at: string): boolean => files.has(at) || dirs.has(at);
  const entries = await fromSource(dir.path, () => readdir(dir.ref, { withFileTypes: true }));
  if (entries.length === 0 && !listed(prefix))
    throw new NotASource(`${dir.path} is an empty dir, which its marker cannot list`);
  for (const entry of entries) {
    const at = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isSymbolicLink() && !listed(at))
      throw new NotASource(`${join(dir.path, entry.name)} is a symlink, which its marker cannot list`);
    if (entry.isDirectory())
      await withSubdir(dir, [entry.name], openSourceChild, (child) =>
        checkNothingUnlisted(child, files, dirs, at),
      );
  }
};

/** Fills `target` from the held model dir `source` once its marker says it holds `spec`'s content. */
const fillFromDir = async (
  source: OpenDir,
  target: OpenDir,
  spec: ModelSpec,
  { link, spaceCheck, signal }: Pick<FillFromModelDir, 'link' | 'spaceCheck' | 'signal'>,
): Promise<Filled> => {
  const state = await fromSource(source.path, () => readDirState(source));
  if (state._tag !== 'Valid') throw new NotASource(`${source.path} has no single valid marker`);
  if (state.files === undefined) throw new NotASource(`the marker of ${source.path} lists no files`);
  if (!sameContent(state.spec, spec)) throw new NotASource(`${source.path} holds other stored content`);
  await checkNothingUnlisted(source, state.files, manifestDirs(state.files));
  const filled = { files: 0, linkedBytes: 0, clonedBytes: 0, copiedBytes: 0 };
  const totalBytes = [...state.files.values()].reduce((sum, size) => sum + size, 0);
  // Links and clones take no room: the disk is checked for what is left once the first file must be copied.
  const beforeCopying = async (): Promise<void> => {
    const what = `filling ${target.path} from ${source.path}`;
    await spaceCheck?.(target.path, totalBytes - filled.linkedBytes - filled.clonedBytes, what);
  };
  const placing: Placing = { link, copy: fileCopier({ beforeCopying }), signal };
  for (const [dir, entries] of byDir(state.files)) {
    signal.throwIfAborted();
    // A manifest never lists a marker look-alike at the top (dropped before it is written): refuse one that does.
    if (dir === '' && entries.some(([base]) => isMarkerName(base)))
      throw new NotASource(`the marker of ${source.path} lists a file named like a marker`);
    const parts = dir === '' ? [] : dir.split('/');
    await withSubdir(source, parts, openSourceChild, (from) =>
      withSubdir(target, parts, makeTargetChild, (to) =>
        forEachLimited(entries, fanOut, async (entry) => {
          signal.throwIfAborted();
          const how = await placeFile(from, to, entry, placing);
          filled.files++;
          filled[`${how}Bytes`] += entry[1];
        }),
      ),
    );
  }
  return filled;
};

/** A staging dir held open, and the model and spec it is for. */
export interface StagingOf {
  readonly name: ModelName;
  readonly spec: ModelSpec;
  readonly target: OpenDir;
}

/** A fill of a staging dir from the installed model `source` at `path`. */
export interface FillFromModelDir extends StagingOf {
  readonly source: ModelName;
  readonly path: string;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /**
   * Hard link the files (`--link-same-content`): only when the model server cannot write the model dir, since a
   * write through one link changes every model of the content (docs/reliability.md says why modes do not help).
   */
  readonly link: boolean;
  /** The disk check (`--min-free-bytes`) copies must pass before the first is written; absent: none. */
  readonly spaceCheck?: SpaceCheck | undefined;
  /**
   * The dir the source must be (its device and inode), when it is one this process installed: what holds its path
   * now may be a neighbour's (the model server can rename entries of the model dir), whatever marker it shows.
   */
  readonly installed?: { readonly dev: number; readonly ino: number } | undefined;
}

const entriesOf = (dir: OpenDir): Promise<string[]> =>
  step(`cannot list ${dir.path}`, () => readdir(dir.ref));

/** `ModelStore.fillFrom` on a staging dir held open: see ports.ts for the contract. */
export const fillFromModelDir = async (fill: FillFromModelDir): Promise<Filled | undefined> => {
  const { source, path, name, target, signal, log } = fill;
  signal.throwIfAborted();
  // A provider offers reuse before it writes anything: a dir with files in it is a provider's bug.
  if ((await entriesOf(target)).length > 0)
    throw new Error(`fillFrom: the staging dir ${target.path} is not empty`);
  try {
    const dir = await fromSource(path, () => openDir(path));
    try {
      const { installed } = fill;
      if (installed !== undefined) {
        const opened = await step(`cannot read ${path}`, () => dir.handle.stat());
        if (opened.dev !== installed.dev || opened.ino !== installed.ino)
          throw new NotASource(`${path} is no longer the dir installed there`);
      }
      return await fillFromDir(dir, target, fill.spec, fill);
    } finally {
      await dir.handle.close();
    }
  } catch (cause) {
    if (!(cause instanceof NotASource)) throw cause;
    // Everything in the staging dir is the fill's own: it was empty when the fill began.
    for (const entry of await entriesOf(target)) await removeTree(`${target.ref}/${entry}`);
    log.info(
      { model: name, source, reason: cause.message },
      'cannot fill from another model dir; downloading',
    );
    return undefined;
  }
};
