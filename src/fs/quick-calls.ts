/**
 * quick: the file-system calls on a load's path (the config read, the install, the journal) made inline on the main
 * thread where they are known to be quick, through libuv's pool everywhere else.
 *
 * Why: each pooled call is a trip through libuv's threads and back; a swap's config read takes 6, a small model's
 * install 15: 1.5 of the 4.3 ms from a swap to its load request (`npm run bench -- swap-to-load`). A local file
 * system answers these metadata calls and small writes in microseconds. A remote one (NFS, FUSE) may never answer,
 * and a call made inline there would stop the whole process (the agent port, the health checks): calls there stay
 * pooled, watched by mountWatch. So a call goes inline only on a path under a root `quickUnder` accepted (a local
 * file system with nothing mounted below it), or through a handle opened inline there; and once the mount table
 * (/proc/self/mountinfo: kernel memory, never waits) differs from the one seen then — a mount made over the model dir
 * after the start — every call is pooled again, for good. The table is read at most once every 5 ms.
 * fsync never goes inline: it waits for the disk.
 */
import * as fs from 'node:fs';
import type { Dirent, Mode, Stats } from 'node:fs';
import * as pool from 'node:fs/promises';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

/** What the callers do with an open file or dir: a FileHandle is one; an inline handle is one too. */
export interface Handle {
  readonly fd: number;
  stat(): Promise<Stats>;
  chmod(mode: Mode): Promise<void>;
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number | null,
  ): Promise<{ bytesRead: number }>;
  /** Writes at the file's position (as FileHandle.writeFile does). */
  writeFile(data: string | Uint8Array): Promise<void>;
  sync(): Promise<void>;
  datasync(): Promise<void>;
  close(): Promise<void>;
}

// statfs f_type values (linux/magic.h) of file systems answered by the kernel from local storage or memory: ext2-4,
// XFS, Btrfs, tmpfs (ConfigMaps, emptyDir in memory), overlayfs (the container's own), ZFS, F2FS, ramfs.
const localTypes: ReadonlySet<number> = new Set([
  0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0x2fc12fc1, 0xf2f52010, 0x858458f6,
]);

const mountTable = '/proc/self/mountinfo';
const roots = new Set<string>();
/** Descriptors opened inline (under a root): calls through `/proc/self/fd/<n>` go inline too. */
const inlineFds = new Set<number>();
let mountsSeen: Buffer | undefined;
/** When the mount table was last found unchanged (performance.now()); it is read again past `recheckAfterMs`. */
let checkedAt = -Infinity;
// Not once an event-loop turn: a turn may wait in its poll phase for a watcher's event, a mount made meanwhile. A
// read costs 20-100 µs (more with more mounts): once a millisecond it was 0.1-0.4 ms of a swap's 3 ms to its load.
const recheckAfterMs = 5;

// The table is read through one descriptor kept open, into one buffer: a read from offset 0 makes the kernel write
// it afresh, and after an idle spell an open, read and close cost ~240 µs here against ~100 µs for the read alone.
let tableFd: number | undefined;
let tableBuffer = Buffer.allocUnsafe(16 * 1024);
// Far past any pod's table (a few KiB); a bigger one is taken for unreadable, and nothing goes inline.
const maxTableBytes = 4 * 1024 * 1024;

/** The mount table as it is now, in a buffer the next read overwrites (copy what is kept); undefined if unreadable. */
const readMounts = (): Buffer | undefined => {
  try {
    tableFd ??= fs.openSync(mountTable, 'r');
    let length = 0;
    for (;;) {
      if (length === tableBuffer.length) {
        if (length >= maxTableBytes) return undefined;
        tableBuffer = Buffer.concat([tableBuffer, Buffer.allocUnsafe(length)]);
      }
      const read = fs.readSync(tableFd, tableBuffer, length, tableBuffer.length - length, length);
      if (read === 0) return tableBuffer.subarray(0, length);
      length += read;
    }
  } catch {
    return undefined;
  }
};

/** The mount points in a mount table (field 5 of each line, its octal escapes decoded). */
const mountPoints = (table: Buffer): string[] =>
  table
    .toString()
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined)
    .map((point) =>
      point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))),
    );

// A `..` part could lead out of a root to another file system: such a path is taken for none under it.
const upward = /(?:^|\/)\.\.(?:\/|$)/;

const isUnder = (path: string, root: string): boolean =>
  (path === root || path.startsWith(root === '/' ? root : `${root}/`)) && !upward.test(path);

/** True while the mount table is the one the roots were accepted with (read at most once every `recheckAfterMs`). */
const mountsUnchanged = (): boolean => {
  if (mountsSeen === undefined) return false;
  const at = performance.now();
  if (at - checkedAt < recheckAfterMs) return true;
  const now = readMounts();
  if (now !== undefined && now.equals(mountsSeen)) {
    checkedAt = at;
    return true;
  }
  // A mount came or went: where calls may now wait on a server is not known any more.
  mountsSeen = undefined;
  roots.clear();
  return false;
};

const handleFd = /^\/proc\/self\/fd\/(\d+)(?:\/|$)/;

/** Whether a call on `path` goes inline. */
const inlineAt = (path: fs.PathLike): boolean => {
  if (roots.size === 0 || typeof path !== 'string') return false;
  const fd = handleFd.exec(path)?.[1];
  const known = fd !== undefined ? inlineFds.has(Number(fd)) : [...roots].some((root) => isUnder(path, root));
  return known && mountsUnchanged();
};

/** `run` as a promise: its value, or what it threw as the rejection (as the pooled call would reject). */
// eslint-disable-next-line @typescript-eslint/require-await -- async turns the sync call's throw into a rejection
const settled = async <T>(run: () => T): Promise<T> => run();

const fsync = promisify(fs.fsync);
const fdatasync = promisify(fs.fdatasync);

/** An fd opened inline: its calls inline, but for the flushes. */
class InlineHandle implements Handle {
  private closed = false;
  constructor(readonly fd: number) {
    inlineFds.add(fd);
  }
  stat = (): Promise<Stats> => settled(() => fs.fstatSync(this.fd));
  chmod = (mode: Mode): Promise<void> => settled(() => fs.fchmodSync(this.fd, mode));
  read = (buffer: Uint8Array, offset: number, length: number, position: number | null) =>
    settled(() => ({ bytesRead: fs.readSync(this.fd, buffer, offset, length, position) }));
  writeFile = (data: string | Uint8Array): Promise<void> => settled(() => fs.writeFileSync(this.fd, data));
  sync = (): Promise<void> => fsync(this.fd);
  datasync = (): Promise<void> => fdatasync(this.fd);
  close = (): Promise<void> =>
    settled(() => {
      if (this.closed) return;
      this.closed = true;
      inlineFds.delete(this.fd);
      fs.closeSync(this.fd);
    });
}

/** How a small file is written: its open flags (a number: O_EXCL, O_NOFOLLOW), its mode. */
interface WriteOptions {
  readonly flag: string | number;
  readonly mode?: number;
}

/** Installs under way (`installing`). */
let installs = 0;

// Creates inline slower than this, 3 of the last 16, send a burst's creates through the pool for `createBackOffMs`.
// On a journaled ext4 a mkdir or an O_CREAT open takes ~0.04 ms here, where a trip through the pool costs the main
// thread more (the wake-up of a pool thread, the completion): 1,000 models in one swap took ~20 % less CPU and ~10 %
// less time with their creates inline. But creates may wait: on the journal's commit (the flusher's fsyncs force
// one), or on ext4 without a journal, which searches past every inode freed in the last minutes (0.3-0.8 ms each
// after a burst of deletes: 20 % longer inline there). One slow create alone is no sign (the thread was preempted).
// A lone install's creates go inline whatever they cost, as ever.
const defaultSlowCreateMs = 0.25;
const defaultCreateBackOffMs = 1000;
const slowOfLast16 = 3;
let slowCreateMs = defaultSlowCreateMs;
let createBackOffMs = defaultCreateBackOffMs;
/** The last 16 inline creates, a bit each (1: slow), the latest lowest. */
let createHistory = 0;
/** When the creates last turned slow (performance.now()). */
let slowCreatesAt = -Infinity;

/** Whether a call that creates a file or dir goes inline: one install at most under way, or creates are quick. */
const createsInline = (): boolean => installs <= 1 || performance.now() - slowCreatesAt > createBackOffMs;

const bitsSet = (bits: number): number => {
  let count = 0;
  for (let rest = bits; rest !== 0; rest &= rest - 1) count++;
  return count;
};

/** `create` run inline, timed: creates turned slow make a burst's next ones pooled for a while (`createsInline`). */
const timedCreate = <T>(create: () => T): Promise<T> =>
  settled(() => {
    const started = performance.now();
    try {
      return create();
    } finally {
      const ended = performance.now();
      createHistory = ((createHistory << 1) | (ended - started > slowCreateMs ? 1 : 0)) & 0xffff;
      if (bitsSet(createHistory) >= slowOfLast16) {
        slowCreatesAt = ended;
        createHistory = 0; // judged afresh once the back-off is over
      }
    }
  });

/**
 * What counts as a slow create (ms; Infinity: none, 0: every one) and how long slow creates keep a burst's pooled:
 * tests set them, `quickNowhere` restores them.
 */
export const slowCreatesAbove = (ms: number, backOffMs = defaultCreateBackOffMs): void => {
  slowCreateMs = ms;
  createBackOffMs = backOffMs;
  createHistory = 0;
  slowCreatesAt = -Infinity;
};

/** Marks an install under way until the function it returns is called (once). */
export const installing = (): (() => void) => {
  installs++;
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    installs--;
  };
};

function readdir(path: string): Promise<string[]>;
function readdir(path: string, options: { withFileTypes: true }): Promise<Dirent[]>;
function readdir(path: string, options?: { withFileTypes: true }): Promise<string[] | Dirent[]> {
  if (!inlineAt(path)) return options === undefined ? pool.readdir(path) : pool.readdir(path, options);
  return settled(() => (options === undefined ? fs.readdirSync(path) : fs.readdirSync(path, options)));
}

/** The calls, each inline where that is quick (see the top), else node:fs/promises' own. */
export const quick = {
  lstat: (path: string): Promise<Stats> =>
    inlineAt(path) ? settled(() => fs.lstatSync(path)) : pool.lstat(path),
  stat: (path: string): Promise<Stats> =>
    inlineAt(path) ? settled(() => fs.statSync(path)) : pool.stat(path),
  statfs: (path: string): Promise<fs.StatsFs> =>
    inlineAt(path) ? settled(() => fs.statfsSync(path)) : pool.statfs(path),
  realpath: (path: string): Promise<string> =>
    inlineAt(path) ? settled(() => fs.realpathSync.native(path)) : pool.realpath(path),
  readlink: (path: string): Promise<string> =>
    inlineAt(path) ? settled(() => fs.readlinkSync(path)) : pool.readlink(path),
  mkdtemp: (prefix: string): Promise<string> =>
    createsInline() && inlineAt(prefix) ? timedCreate(() => fs.mkdtempSync(prefix)) : pool.mkdtemp(prefix),
  rename: (from: string, to: string): Promise<void> =>
    inlineAt(from) && inlineAt(to) ? settled(() => fs.renameSync(from, to)) : pool.rename(from, to),
  readdir,
  /** A small file written whole (a marker, a body of a few KiB): `options` as writeFile's. */
  writeFile: (path: string, data: string | Uint8Array, options: WriteOptions): Promise<void> =>
    createsInline() && inlineAt(path)
      ? timedCreate(() => fs.writeFileSync(path, data, options as fs.WriteFileOptions))
      : pool.writeFile(path, data, options),
  open: (path: string, flags: number, mode?: Mode): Promise<Handle> => {
    const creates = (flags & fs.constants.O_CREAT) !== 0;
    if ((creates && !createsInline()) || !inlineAt(path)) return pool.open(path, flags, mode);
    const open = () => new InlineHandle(fs.openSync(path, flags, mode));
    return creates ? timedCreate(open) : settled(open);
  },
};

/**
 * Lets calls under `paths` go inline, those of them on a local file system with nothing mounted below them (each
 * also as its real path); none without a readable mount table. Resolves to the roots accepted.
 */
export const quickUnder = async (paths: ReadonlyArray<string>): Promise<ReadonlyArray<string>> => {
  const read = readMounts();
  if (read === undefined) return [];
  const table = Buffer.from(read); // as read now: the awaits below may let another read overwrite the buffer
  const points = mountPoints(table);
  const accepted: string[] = [];
  for (const path of paths) {
    const forms = [resolve(path), await pool.realpath(path).catch(() => undefined)];
    const local = await pool.statfs(path).then(
      ({ type }) => localTypes.has(type >>> 0),
      () => false,
    );
    for (const root of forms) {
      if (root === undefined || !local || points.some((point) => point !== root && isUnder(point, root)))
        continue;
      if (!roots.has(root)) accepted.push(root);
      roots.add(root);
    }
  }
  if (accepted.length > 0) mountsSeen = table;
  return accepted;
};

/** No call inline any more (tests start each case from it). */
export const quickNowhere = (): void => {
  roots.clear();
  mountsSeen = undefined;
  checkedAt = -Infinity;
  slowCreatesAbove(defaultSlowCreateMs);
};
