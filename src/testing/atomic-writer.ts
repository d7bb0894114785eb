/** Test kit: a synchronous emulator of kubelet's AtomicWriter (ConfigMap volume updates); plain edits in plain-writers.ts. */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorCode } from '../core/errors';

/** One payload item: the bytes (a string is written as UTF-8) and optionally its own mode. */
export type FileProjection = string | Buffer | { readonly data: string | Buffer; readonly mode?: number };

/** What a ConfigMap volume projects: key (relative path inside the volume) to content. */
export type AtomicWritePayload = Readonly<Record<string, FileProjection>>;

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

const DATA_DIR_NAME = '..data';
const NEW_DATA_DIR_NAME = '..data_tmp';
const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
// Go's os.MkdirTemp gives up after this many name collisions.
const MKDIR_TEMP_TRIES = 10000;

const octal = (mode: number): string => mode.toString(8).padStart(3, '0');

// kubelet's validatePath, on the raw key. Lengths are Go `len`, i.e. bytes.
const validatePath = (key: string): void => {
  if (key === '') throw new Error(`invalid path: must not be empty: ${JSON.stringify(key)}`);
  if (path.posix.isAbsolute(key)) throw new Error(`invalid path: must be relative path: ${key}`);
  if (Buffer.byteLength(key) > MAX_PATH_LENGTH) {
    throw new Error(`invalid path: must be less than or equal to ${MAX_PATH_LENGTH} characters`);
  }
  const items = key.split('/');
  for (const item of items) {
    if (item === '..') throw new Error(`invalid path: must not contain '..': ${key}`);
    if (Buffer.byteLength(item) > MAX_FILE_NAME_LENGTH) {
      throw new Error(
        `invalid path: filenames must be less than or equal to ${MAX_FILE_NAME_LENGTH} characters`,
      );
    }
  }
  if (items[0]!.startsWith('..')) throw new Error(`invalid path: must not start with '..': ${key}`);
};

// Go's filepath.Clean for a relative path: path.posix.normalize keeps a trailing slash, Clean does not.
const cleanPath = (key: string): string => {
  const normalized = path.posix.normalize(key);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
};

interface CleanItem {
  readonly data: Buffer;
  readonly mode: number;
}

// Step 1. Beyond kubelet (documented deviations, so a test kit can never corrupt a volume or depend on Go's
// random map order): the *cleaned* key is re-checked (`./..data` passes kubelet's raw check), two keys may
// not clean to the same path, and modes must be 0..0777 as the API server enforces for ConfigMap volumes.
const validatePayload = (
  payload: AtomicWritePayload,
  defaultMode: number,
): ReadonlyMap<string, CleanItem> => {
  const checkMode = (mode: number, what: string): number => {
    if (!Number.isInteger(mode) || mode < 0 || mode > 0o777)
      throw new Error(`invalid mode for ${what}: ${mode}`);
    return mode;
  };
  checkMode(defaultMode, 'defaultMode');
  const clean = new Map<string, CleanItem>();
  for (const [key, item] of Object.entries(payload)) {
    validatePath(key);
    const cleaned = cleanPath(key);
    if (cleaned === '.' || cleaned.startsWith('..'))
      throw new Error(`invalid path: must not start with '..': ${key}`);
    if (clean.has(cleaned)) throw new Error(`invalid payload: more than one key cleans to ${cleaned}`);
    const isPlain = typeof item === 'string' || Buffer.isBuffer(item);
    const data = isPlain ? item : item.data;
    const mode = isPlain || item.mode === undefined ? defaultMode : checkMode(item.mode, key);
    clean.set(cleaned, { data: typeof data === 'string' ? Buffer.from(data, 'utf8') : data, mode });
  }
  return clean;
};

// Step 3. filepath.Walk with kubelet's visitor, which ignores every error: so an unreadable or missing old
// directory just yields fewer paths. lstat semantics: links inside the old version are not followed.
const walkRelative = (root: string): string[] => {
  const found: string[] = [];
  const visit = (relDir: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(root, relDir), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
      found.push(rel);
      if (entry.isDirectory()) visit(rel);
    }
  };
  try {
    if (fs.lstatSync(root).isDirectory()) visit('');
  } catch {
    // ENOENT root: Walk reports it to the visitor, which returns nil for the root itself.
  }
  return found;
};

const pathsToRemove = (payload: ReadonlyMap<string, CleanItem>, oldTsPath: string): string[] => {
  // Every key and each of its parent directories stays; everything else found in the old version goes.
  const keep = new Set<string>();
  for (const key of payload.keys()) {
    for (let sub = key; sub !== '' && sub !== '.'; sub = path.posix.dirname(sub)) keep.add(sub);
  }
  return walkRelative(oldTsPath).filter((p) => !keep.has(p));
};

// Step 4, shouldWritePayload: first differing key wins. Like kubelet, only ENOENT from lstat means "missing";
// any other lstat error falls through to the read, whose error aborts the write (e.g. ENOTDIR when an old
// file `a` becomes a directory `a/b`, if no key compared earlier already differed).
const shouldWritePayload = (payload: ReadonlyMap<string, CleanItem>, oldTsPath: string): boolean => {
  for (const [key, item] of payload) {
    const file = path.join(oldTsPath, key);
    try {
      fs.lstatSync(file);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return true;
    }
    if (!item.data.equals(fs.readFileSync(file))) return true;
  }
  return false;
};

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

// Step 5, os.MkdirTemp(targetDir, time.Now().UTC().Format("..2006_01_02_15_04_05.")): prefix + decimal
// uint32, created 0700 (then umask), retried on EEXIST.
const mkdirTimestamped = (targetDir: string): string => {
  const now = new Date();
  const prefix =
    `..${pad(now.getUTCFullYear(), 4)}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_` +
    `${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}.`;
  for (let attempt = 0; attempt < MKDIR_TEMP_TRIES; attempt++) {
    const name = prefix + String(randomBytes(4).readUInt32BE(0));
    try {
      fs.mkdirSync(path.join(targetDir, name), { mode: 0o700 });
      return name;
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
    }
  }
  throw Object.assign(new Error(`mkdirtemp ${path.join(targetDir, prefix)}*: file already exists`), {
    code: 'EEXIST',
  });
};

// Go's os.Remove: unlink, else rmdir; report rmdir's error unless it is ENOTDIR.
const goRemove = (file: string): void => {
  try {
    fs.unlinkSync(file);
  } catch (unlinkErr) {
    try {
      fs.rmdirSync(file);
    } catch (rmdirErr) {
      if (errorCode(rmdirErr) === 'ENOTDIR') throw unlinkErr;
      throw rmdirErr;
    }
  }
};

const ignoreErrors = (action: () => void): void => {
  try {
    action();
  } catch {
    // kubelet only logs failures of its rollback actions.
  }
};

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
