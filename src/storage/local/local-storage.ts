/**
 * localFileStorage and pvcStorage: the StorageProviders for local paths and file:// URLs, and for `pvc://<claim>/<path>`
 * (a mounted volume holding the model).
 */
import type { LocalModelFiles } from '../../core/storage-choices';
import { lstat, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as E from 'fp-ts/Either';
import { permanentError } from '../../core/errors';
import { selectsAll, type FileSelection } from '../../core/file-selection';
import { parsePvcUri, pvcLocalPath } from '../../core/pvc-uri';
import { EntrySelection } from '../archive/entry-selection';
import { redactUri } from '../../core/storage-uri';
import type { StorageProvider } from '../../ports';
import { archiveFormatOf, extractFile } from '../archive/extract';
import { defaultDownloadLimits, type DownloadLimits } from '../download-limits';
import { fileCopier, fsError, isMissing } from '../../fs';
import { copyDir, copyFile, throwIfAborted, type Tree } from './copy-tree';
import { checkLocalSource, isInside } from './local-roots';
import { loneArchiveIn } from './lone-archive';
import { sourceWatches, type WatchedCopy } from './source-watch';
import { modelGuard } from '../transfer-guard';

export { copiedUpToBytes } from './copy-tree';

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
