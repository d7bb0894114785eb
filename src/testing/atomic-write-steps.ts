/** Test kit: the steps of kubelet's AtomicWriter that atomic-writer.ts composes — key checks, the old version's paths, the timestamped dir, Go's remove. */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorCode } from '../core/errors';

/** One payload item: the bytes (a string is written as UTF-8) and optionally its own mode. */
export type FileProjection = string | Buffer | { readonly data: string | Buffer; readonly mode?: number };

/** What a ConfigMap volume projects: key (relative path inside the volume) to content. */
export type AtomicWritePayload = Readonly<Record<string, FileProjection>>;

export const DATA_DIR_NAME = '..data';
export const NEW_DATA_DIR_NAME = '..data_tmp';
const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
// Go's os.MkdirTemp gives up after this many name collisions.
const MKDIR_TEMP_TRIES = 10000;

export const octal = (mode: number): string => mode.toString(8).padStart(3, '0');

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
export const validatePayload = (
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

export const pathsToRemove = (payload: ReadonlyMap<string, CleanItem>, oldTsPath: string): string[] => {
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
export const shouldWritePayload = (payload: ReadonlyMap<string, CleanItem>, oldTsPath: string): boolean => {
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
export const mkdirTimestamped = (targetDir: string): string => {
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
export const goRemove = (file: string): void => {
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

export const ignoreErrors = (action: () => void): void => {
  try {
    action();
  } catch {
    // kubelet only logs failures of its rollback actions.
  }
};
