/** Test kit: a synchronous emulator of kubelet's AtomicWriter (ConfigMap volume updates); plain edits in plain-writers.ts. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorCode } from '../core/errors';
import {
  DATA_DIR_NAME,
  NEW_DATA_DIR_NAME,
  octal,
  validatePayload,
  pathsToRemove,
  shouldWritePayload,
  mkdirTimestamped,
  goRemove,
  ignoreErrors,
  type AtomicWritePayload,
} from './atomic-write-steps';

export type { AtomicWritePayload, FileProjection } from './atomic-write-steps';

/**
 * Names of the observable actions of `atomicWrite`, reported to `onStep` right after each one completed
 * (the numbers are the steps of kubelet's `Write`, commented in `atomicWrite`).
 */
export type AtomicWriteStep =
  | 'readlink' // 2
  | 'paths-to-remove' // 3
  | 'compare' // 4
  | 'mkdir-ts' // 5, mkdir 0700
  | 'chmod-ts' // 5, chmod 0755
  | 'write' // 6, one per file
  | 'set-perms' // 7
  | 'symlink-tmp' // 8
  | 'rename' // 9
  | 'link' // 10, one per created link
  | 'unlink' // 11, one per removed entry
  | 'rmdir-old-ts'; // 12

/** What kubelet's volume settings and a test's observation points change about one write. */
export interface AtomicWriteOptions {
  /** Mode of items without their own mode: the volume's `defaultMode` (kubelet's default is 0644). */
  readonly defaultMode?: number;
  /**
   * Create `targetDir` (mkdir -p) when missing, as kubelet's emptyDir set-up does before the first write.
   * Default true; false gives kubelet's `NewAtomicWriter` error (ENOENT) instead.
   */
  readonly create?: boolean;
  /**
   * Called after each step with a human-readable detail, e.g. to read `..data/models.json` in between or
   * trace. A throw from it propagates without any rollback: that emulates kubelet dying after that step.
   */
  readonly onStep?: (step: AtomicWriteStep, detail: string) => void;
  /** Kubelet's `setPerms(tsDirName)` hook (fsGroup ownership), run before publication (step 7). */
  readonly setPerms?: (tsDirName: string) => void;
}

/** What one `atomicWrite` did. */
export interface AtomicWriteResult {
  /** False when the content was identical and nothing had to be removed: no new version was written. */
  readonly changed: boolean;
  /** The timestamped directory `..data` points to afterwards (the new one, or the kept one). */
  readonly tsDirName: string;
  /** The previous timestamped directory (now deleted); absent on a first write and when nothing changed. */
  readonly oldTsDirName?: string;
  /** Top-level user-visible entries unlinked because their key left the payload (step 11), sorted. */
  readonly removedPaths: string[];
  /** User-visible links created (step 10), in payload order. */
  readonly createdLinks: string[];
}

/**
 * Projects `payload` into `targetDir` exactly as kubelet's AtomicWriter `Write` does for a configMap/secret
 * volume (current algorithm, Linux), so watchers can be tested against the real event sequence: files live in
 * a hidden `..<UTC timestamp>.<uint32>` directory, `..data` is a relative link to it swapped by `rename(2)`,
 * and each top-level key is a link `e -> ..data/e`. Synchronous on purpose (node:fs sync calls, in kubelet's
 * order): in-process watchers get the events once it returns, and `onStep` can inspect the volume in between.
 * Throws on an invalid key (before touching anything) and on filesystem errors, rolling back like kubelet.
 * Deviations: payload order instead of Go's random map order, stricter key/mode checks, no chown.
 */
export const atomicWrite = (
  targetDir: string,
  payload: AtomicWritePayload,
  options: AtomicWriteOptions = {},
): AtomicWriteResult => {
  const { defaultMode = 0o644, create = true, onStep, setPerms } = options;
  const step = (name: AtomicWriteStep, detail: string): void => onStep?.(name, detail);

  // (1) Validate and clean every key first: an invalid payload has no effect at all (kubelet's volume
  // set-up would have created the directory already; we validate before doing so).
  const cleanPayload = validatePayload(payload, defaultMode);
  if (create) fs.mkdirSync(targetDir, { recursive: true });
  else fs.statSync(targetDir); // NewAtomicWriter: ENOENT when the volume directory does not exist.

  // (2) The current version. ENOENT: first write. Anything else (EINVAL: `..data` is not a link) aborts.
  const dataDirPath = path.join(targetDir, DATA_DIR_NAME);
  let oldTsDir = '';
  try {
    oldTsDir = fs.readlinkSync(dataDirPath);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw err;
  }
  step('readlink', oldTsDir === '' ? '(none: first write)' : oldTsDir);
  const oldTsPath = path.join(targetDir, oldTsDir);

  let toRemove: string[] = [];
  let shouldWrite = true;
  if (oldTsDir !== '') {
    // (3) Paths of the old version that are neither a key nor a key's parent directory.
    toRemove = pathsToRemove(cleanPayload, oldTsPath);
    step('paths-to-remove', toRemove.join(' '));
    // (4) Byte comparison only: a mode-only change is not a new version. Nothing to do: keep the old
    // directory (clearing oldTsDir so step 12 spares it) and go to step 10, which re-creates missing links
    // (kubernetes#121472: links lost to a kubelet restart mid-write stayed missing forever before).
    const differs = shouldWritePayload(cleanPayload, oldTsPath);
    step('compare', differs ? 'content differs' : 'content identical');
    if (!differs && toRemove.length === 0) {
      shouldWrite = false;
    }
  }

  const currentTsDir = oldTsDir;
  let tsDirName = oldTsDir;
  if (shouldWrite) {
    // (5) New version directory; chmod 0755 so the umask cannot stop group/other from traversing it.
    tsDirName = mkdirTimestamped(targetDir);
    const tsDir = path.join(targetDir, tsDirName);
    step('mkdir-ts', tsDirName);
    fs.chmodSync(tsDir, 0o755);
    step('chmod-ts', `${tsDirName} mode=755`);

    // (6) Write each file: mkdir -p its parent (0777 & ~umask), os.WriteFile (O_CREAT|O_TRUNC), then chmod
    // the exact mode. Like kubelet, a failure here returns without removing the new directory (an orphan
    // `..<ts>` dir a watcher must tolerate); `..data` is untouched, so readers still see the old version.
    for (const [key, item] of cleanPayload) {
      const fullPath = path.join(tsDir, key);
      fs.mkdirSync(path.dirname(fullPath), { recursive: true, mode: 0o777 });
      fs.writeFileSync(fullPath, item.data, { mode: item.mode });
      fs.chmodSync(fullPath, item.mode);
      step('write', `${tsDirName}/${key} mode=${octal(item.mode)} bytes=${item.data.length}`);
    }

    // (7) Ownership hook, still before publication.
    if (setPerms !== undefined) {
      setPerms(tsDirName);
      step('set-perms', tsDirName);
    }

    // (8) The would-be `..data`, relative target. EEXIST from a stale `..data_tmp` (a crash) lands here.
    const newDataDirPath = path.join(targetDir, NEW_DATA_DIR_NAME);
    try {
      fs.symlinkSync(tsDirName, newDataDirPath);
    } catch (err) {
      ignoreErrors(() => fs.rmSync(tsDir, { recursive: true, force: true }));
      throw err;
    }
    step('symlink-tmp', `${NEW_DATA_DIR_NAME} -> ${tsDirName}`);

    // (9) Publication: rename(2) replaces the `..data` link atomically, so `..data` always resolves to a
    // complete version. On failure undo steps 8 and 5.
    try {
      fs.renameSync(newDataDirPath, dataDirPath);
    } catch (err) {
      ignoreErrors(() => fs.unlinkSync(newDataDirPath));
      ignoreErrors(() => fs.rmSync(tsDir, { recursive: true, force: true }));
      throw err;
    }
    step('rename', `${NEW_DATA_DIR_NAME} -> ${DATA_DIR_NAME}`);
  }

  // (10) User-visible links, after the swap (kubernetes#97642): one per first path element, created only
  // when readlink says ENOENT. An existing link already goes through `..data`; an existing non-link (EINVAL)
  // is silently left alone. So a new key becomes visible only now, after `..data` already serves it.
  const createdLinks: string[] = [];
  for (const key of cleanPayload.keys()) {
    const linkName = key.split('/')[0]!;
    try {
      fs.readlinkSync(path.join(targetDir, linkName));
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') continue;
      fs.symlinkSync(path.posix.join(DATA_DIR_NAME, linkName), path.join(targetDir, linkName));
      createdLinks.push(linkName);
      step('link', `${linkName} -> ${DATA_DIR_NAME}/${linkName}`);
    }
  }

  // (11) Unlink top-level entries whose key is gone (now dangling links); nested ones vanish with the old
  // directory. Every entry is tried; the last error is thrown, and then step 12 does not run.
  const removedPaths: string[] = [];
  let lastError: Error | undefined;
  for (const removed of toRemove.filter((p) => !p.includes('/')).sort()) {
    try {
      goRemove(path.join(targetDir, removed));
    } catch (err) {
      lastError = err as Error;
      continue;
    }
    removedPaths.push(removed);
    step('unlink', removed);
  }
  if (lastError !== undefined) throw lastError;

  // (12) The previous version, recursively (os.RemoveAll: a missing directory is fine).
  if (shouldWrite && currentTsDir !== '') {
    fs.rmSync(oldTsPath, { recursive: true, force: true });
    step('rmdir-old-ts', currentTsDir);
  }

  return {
    changed: shouldWrite,
    tsDirName,
    ...(shouldWrite && currentTsDir !== '' ? { oldTsDirName: currentTsDir } : {}),
    removedPaths,
    createdLinks,
  };
};

/**
 * Projects an empty payload: what kubelet does when the ConfigMap loses its last key (or an optional
 * ConfigMap is deleted). `..data` then points to an empty version and every user-visible link is unlinked.
 */
export const removeAllKeys = (targetDir: string, options?: AtomicWriteOptions): AtomicWriteResult =>
  atomicWrite(targetDir, {}, options);
