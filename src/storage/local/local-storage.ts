/**
 * localFileStorage and pvcStorage: the StorageProviders for local paths and file:// URLs, and for `pvc://<claim>/<path>`
 * (a mounted volume holding the model).
 */
import type { LocalModelFiles } from '../../core/storage-choices';
import { constants, type Dirent } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as E from 'fp-ts/Either';
import { errorCode, permanentError, retryableError } from '../../core/errors';
import { selectsAll, type FileSelection } from '../../core/file-selection';
import { parsePvcUri, pvcLocalPath } from '../../core/pvc-uri';
import { EntrySelection } from '../archive/entry-selection';
import type { EntryKind } from '../archive/guard';
import { redactUri } from '../../core/storage-uri';
import type { StorageProvider } from '../../ports';
import { archiveFormatOf, extractFile } from '../archive/extract';
import { defaultDownloadLimits, type DownloadLimits } from '../download-limits';
import { chmodNoFollow, fileCopier, fsError, inRealDirs, isMissing, type FileCopier } from '../../fs';
import { modelFileMode } from '../../core/model-file-mode';
import { checkLocalSource, checkNotSystem, isInside } from './local-roots';
import { loneArchiveIn } from './lone-archive';
import { sourceWatches, type WatchedCopy } from './source-watch';
import { modelGuard, type TransferGuard } from '../transfer-guard';

/** Where a local copy may come from and what it may take: every field has a default. */
export interface LocalStorageOptions {
  /**
   * Dirs a source must lie in once its links are resolved (default `/mnt/pvc`, where KServe mounts a claim);
   * `['/']` allows any path, `[]` none. /proc, /sys, /dev and pseudo filesystems never.
   */
  readonly roots?: ReadonlyArray<string>;
  /** The model cap and archive caps (default `defaultDownloadLimits`); local copies have no minimum rate. */
  readonly limits?: DownloadLimits;
  /** What the user calls `roots`, named when a source lies outside them (the CLI's flag; default `roots`). */
  readonly rootsName?: string;
  /**
   * How each file reaches the model dir: `copy` (a clone where the file system makes one; the default here, as an
   * embedding process's server may not see the source's volume), or `link`: a symlink to each file past 1 MiB where
   * it lies, no byte copied (smaller ones copied: `copiedUpToBytes`), for a model server that mounts the volume at
   * the same path (`--local-model-files`).
   */
  readonly files?: LocalModelFiles;
  /**
   * What each copy runs under: the watch of the volume its source lies on (`sourceWatches`; share one between the
   * providers of a process). Default: a watch of `roots` of its own that logs nothing.
   */
  readonly sourceWatch?: WatchedCopy;
}

const sourcePathOf = (uri: string): string => {
  if (uri.startsWith('/')) return path.resolve(uri);
  try {
    return fileURLToPath(uri);
  } catch (cause) {
    throw permanentError('invalid-uri', `${redactUri(uri)} is not a local path or file:// URL`, cause);
  }
};

/** Fails unless something is at `at`: the permanent `not-found` saying `missing`, or the `filesystem` error of `what`. */
const mustExist = async (at: string, missing: string, what: string): Promise<void> => {
  await lstat(at).catch((cause: unknown) => {
    throw isMissing(cause) ? permanentError('not-found', missing, cause) : fsError(what, cause);
  });
};

const throwIfAborted = (signal: AbortSignal, what: string): void => {
  if (signal.aborted) throw retryableError('aborted', `${what} aborted`, signal.reason);
};

interface Tree {
  readonly sourceRoot: string;
  readonly targetRoot: string;
  readonly signal: AbortSignal;
  readonly what: string;
  readonly guard: TransferGuard;
  /** Copies each file, counted by the guard: a clone where the file system has them. */
  readonly copy: FileCopier;
  /** Each file a symlink to its canonical path instead of a copy (`files: 'link'`). */
  readonly link: boolean;
  /** The files the model's patterns take, by path in the tree; absent: every entry is copied. */
  readonly selection?: EntrySelection;
}

/** True when the file or link at `from` is to be copied (its dirs are made as it is placed). */
const takes = (tree: Tree, from: string, kind: EntryKind): boolean =>
  tree.selection === undefined || tree.selection.takes(path.relative(tree.sourceRoot, from), kind, from);

/** Runs `place` on a path reaching `to`, its dirs made and entered by handle: the model server may plant a link. */
const placed = (tree: Tree, to: string, place: (at: string) => Promise<void>): Promise<void> =>
  inRealDirs(tree.targetRoot, path.relative(tree.targetRoot, to), place, 0o755);

// O_NOFOLLOW: a file swapped for a link since it was listed is not followed; O_NONBLOCK: nor does a FIFO
// swapped in block the open. fstat on the opened file then says what was really opened.
const openFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * With `files: 'link'`, a file up to this size is copied even so: a model's own config files (config.pbtxt,
 * model-settings.json), which the checks before a load read and never through a link, are then files of the model
 * dir as with a copy; and so small a file costs no room worth saving.
 */
export const copiedUpToBytes = 2 ** 20;

// Each file is opened once and its bytes read through that handle, so what was checked is what is copied. A linked
// file is checked the same way; `from` is its canonical path (the root resolved, every dir below it listed as a
// dir), which the link names absolutely: the model server resolves it in its own mount of the volume. It takes no
// room, so the guard's caps, which keep the model dir's disk, do not count it.
const copyFile = async (tree: Tree, from: string, to: string): Promise<void> => {
  const handle = await open(from, openFlags);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw permanentError('refused', `refusing ${from}: not a regular file`);
    if (tree.link && info.size > copiedUpToBytes) return await symlink(from, to);
    await tree.guard.admit(info.size);
    await tree.copy({ handle, size: info.size, path: from, to, signal: tree.signal, what: tree.what });
    await chmodNoFollow(to, modelFileMode(info.mode), tree.what); // readable by the model server
  } finally {
    await handle.close();
  }
};

const copyLink = async (tree: Tree, from: string, to: string): Promise<void> => {
  const refuse = (why: string, cause?: unknown): never => {
    throw permanentError('refused', `refusing symlink ${from}: ${why}`, cause);
  };
  const resolved = await realpath(from).catch((cause: unknown) =>
    refuse(`it cannot be resolved (${errorCode(cause) ?? 'error'})`, cause),
  );
  if (!isInside(tree.sourceRoot, resolved)) refuse(`it points to ${resolved}, outside ${tree.sourceRoot}`);
  // With patterns, a link they take to a file they leave out brings that file's bytes: its target is not copied.
  const { selection } = tree;
  if (selection !== undefined && !selection.passes(path.relative(tree.sourceRoot, resolved))) {
    if ((await stat(resolved)).isFile()) return placed(tree, to, (at) => copyFile(tree, resolved, at));
  }
  // Relative, so the link survives the model store renaming the target dir into place.
  const mirrored = path.join(tree.targetRoot, path.relative(tree.sourceRoot, resolved));
  await placed(tree, to, (at) => symlink(path.relative(path.dirname(to), mirrored) || '.', at));
};

const copyEntry = async (tree: Tree, entry: Dirent, from: string, to: string): Promise<void> => {
  if (entry.isDirectory()) {
    // A mount point inside the tree may be a pseudo filesystem (a source of `/` would reach /proc).
    await checkNotSystem(from, tree.what);
    if (tree.selection === undefined) await placed(tree, to, (at) => mkdir(at, { mode: 0o755 }));
    await copyDir(tree, from, to);
  } else if (entry.isFile()) {
    if (takes(tree, from, 'file')) await placed(tree, to, (at) => copyFile(tree, from, at));
  } else if (entry.isSymbolicLink()) {
    if (takes(tree, from, 'symlink')) await copyLink(tree, from, to);
  } else {
    // Reading a FIFO would block forever; sockets and devices are not model files.
    throw permanentError('refused', `refusing ${from}: not a regular file, directory or symlink`);
  }
};

const copyDir = async (tree: Tree, from: string, to: string): Promise<void> => {
  const entries = await readdir(from, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    throwIfAborted(tree.signal, tree.what);
    await copyEntry(tree, entry, path.join(from, entry.name), path.join(to, entry.name));
  }
};

type Settings = Required<LocalStorageOptions>;

/** The settings of `options`, each field its default when absent. */
const localSettings = (options: LocalStorageOptions): Settings => {
  const roots = options.roots ?? ['/mnt/pvc'];
  return {
    roots,
    limits: options.limits ?? defaultDownloadLimits,
    rootsName: options.rootsName ?? 'roots',
    files: options.files ?? 'copy',
    sourceWatch: options.sourceWatch ?? sourceWatches(roots),
  };
};

/**
 * Copies the file or tree at the absolute path `source` into `targetDir` (or extracts an archive), as
 * localFileStorage says, once `source` passes checkLocalSource; `pvc://` copies through it too.
 */
const copyLocalModel = async (
  settings: Settings,
  source: string,
  targetDir: string,
  signal: AbortSignal,
  select: FileSelection | undefined,
): Promise<void> => {
  const what = `copying ${source}`;
  throwIfAborted(signal, what);
  await mustExist(source, `local path ${source} does not exist`, what);
  try {
    // The named path itself may be a symlink (a mounted volume's `..data`): the user chose it, so follow it.
    const sourceRoot = await realpath(source);
    await checkLocalSource(sourceRoot, settings.roots, what, settings.rootsName);
    const { limits } = settings;
    const guard = modelGuard(what, targetDir, limits);
    const selection = selectsAll(select) ? undefined : new EntrySelection(what, select!);
    const tree: Tree = {
      sourceRoot,
      // Not resolved: the store hands us its staging dir by handle, so a dir swapped for a link cannot redirect us.
      targetRoot: targetDir,
      signal,
      what,
      guard,
      copy: fileCopier({ counter: guard }),
      link: settings.files === 'link',
      selection,
    };
    const info = await stat(sourceRoot);
    const lone = info.isDirectory() ? await loneArchiveIn(sourceRoot, settings, what) : undefined;
    if (info.isFile() || lone !== undefined) {
      // As KServe's storage initializer: a local .tar, .tar.gz, .tgz or .zip (or a dir's only entry, one of them) is
      // unpacked, any other file copied.
      const [file, shown] =
        lone === undefined ? [sourceRoot, source] : [lone.file, path.join(source, lone.name)];
      const name = path.basename(shown);
      const format = archiveFormatOf(name);
      if (format !== undefined) {
        await extractFile(file, format, targetDir, {
          what: `extracting ${shown}`,
          signal,
          limits,
          select,
        });
      } else if (selection === undefined || selection.takes(name, 'file', name)) {
        await copyFile(tree, file, path.join(targetDir, name));
      } else {
        selection.checkSomeTaken();
      }
      return;
    }
    if (!info.isDirectory()) {
      throw permanentError('refused', `refusing ${source}: not a regular file or directory`);
    }
    // The store names its staging dir by its handle (`/proc/self/fd/N`): the check compares where it really is.
    const realTarget = await realpath(targetDir);
    if (isInside(sourceRoot, realTarget)) {
      throw permanentError('refused', `refusing to copy ${source} into ${realTarget}, which lies inside it`);
    }
    await copyDir(tree, sourceRoot, targetDir);
    selection?.checkSomeTaken();
  } catch (cause) {
    throwIfAborted(signal, what);
    throw fsError(what, cause);
  }
};

/**
 * Copies (or links, `files: 'link'`) a model from an absolute path or file:// URL: a file into
 * `targetDir/<basename>`, an archive extracted, a dir's contents, links inside the tree as relative links. What is refused, so that a model cannot smuggle in files
 * from elsewhere: docs/reliability.md, "Downloads"; what patterns take: docs/storage.md, "Choosing files". Fails
 * `refused`, `too-large`, `not-found` or `filesystem`.
 */
export const localFileStorage = (options: LocalStorageOptions = {}): StorageProvider => {
  const settings = localSettings(options);
  return {
    schemes: ['file'],
    // Async, so that a URI that is no path rejects rather than throws.
    download: async (uri, targetDir, signal, _progress, request) => {
      const source = sourcePathOf(uri);
      await settings.sourceWatch(source, signal, (watched) =>
        copyLocalModel(settings, source, targetDir, watched, request?.select),
      );
    },
  };
};

/** Where the claim is mounted and what the user calls it; the rest as for a local path. */
export interface PvcStorageOptions extends Pick<LocalStorageOptions, 'limits' | 'files' | 'sourceWatch'> {
  /** The claim's mount point (KServe's `/mnt/pvc`). */
  readonly root: string;
  /** What the user calls `root`, named in a refusal (the CLI's flag; default `root`). */
  readonly rootName?: string;
}

/**
 * Serves `pvc://<claim>/<path>` as KServe's webhook maps it: `<root>/<path>`, the claim being the one volume mounted
 * at `root`. It is copied or linked as a local path is (`copyLocalModel`), `root` its only allowed root. A URI that is no pvc
 * URI, or leaves the root, is `invalid-uri`; a root that is not there is `not-found`, naming `rootName`.
 */
export const pvcStorage = ({ root, rootName = 'root', ...options }: PvcStorageOptions): StorageProvider => {
  const settings = localSettings({ ...options, roots: [root], rootsName: rootName });
  return {
    schemes: ['pvc'],
    download: async (uri, targetDir, signal, _progress, request) => {
      const pvc = parsePvcUri(uri);
      if (E.isLeft(pvc)) throw permanentError('invalid-uri', pvc.left);
      const shown = redactUri(uri);
      const missing = `${shown}: no claim is mounted at ${root} (${rootName}): it does not exist`;
      const source = pvcLocalPath(root, pvc.right);
      await settings.sourceWatch(source, signal, async (watched) => {
        await mustExist(root, missing, `reading ${root} for ${shown}`);
        await copyLocalModel(settings, source, targetDir, watched, request?.select);
      });
    },
  };
};
