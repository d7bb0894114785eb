/**
 * Disk faults for a model dir: a small tmpfs mounted over it (full by a ballast file, read-only by a remount) where
 * the test may mount, else the same faults injected at the fs layer (ENOSPC from every stream write, EROFS from
 * every change under the dir). `diskModes` says which can run here; both run where both can.
 */
import { execFileSync } from 'node:child_process';
import fs, { existsSync, mkdtempSync, rmSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../../../src/testing/wait';

/** The file that fills a tmpfs model dir (an entry of the model dir while it is full). */
export const ballastName = '.ballast';

/** How the fault is made: a real small file system, or errors injected into node's fs. */
export type DiskMode = 'tmpfs' | 'injected';

const canMount = (): boolean => {
  const dir = mkdtempSync(join(tmpdir(), 'modelsync-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** The modes to run: tmpfs too when mounting is permitted (root, CAP_SYS_ADMIN) unless MODELSYNC_TEST_DISK_FAULTS=inject. */
export const diskModes = (): DiskMode[] =>
  process.env['MODELSYNC_TEST_DISK_FAULTS'] !== 'inject' && canMount() ? ['tmpfs', 'injected'] : ['injected'];

/** A model dir whose disk can be filled up and made read-only. */
export interface FaultyDisk {
  readonly mode: DiskMode;
  /** Leaves less than `freeBytes` free: a ballast file on tmpfs; injected, every stream write fails ENOSPC. */
  fill(): Promise<void>;
  /** Frees the space `fill` took. */
  free(): Promise<void>;
  /** Makes the model dir read-only: a remount on tmpfs; injected, every change under it fails EROFS. */
  readOnly(): Promise<void>;
  /** Undoes `readOnly`. */
  writable(): Promise<void>;
  /** Ends every fault and unmounts: call before deleting the dir. */
  close(): void;
}

const errno = (code: 'ENOSPC' | 'EROFS', syscall: string, path?: string): NodeJS.ErrnoException =>
  Object.assign(
    new Error(
      `${code}: ${code === 'ENOSPC' ? 'no space left on device' : 'read-only file system'}, ${syscall}${path === undefined ? '' : ` '${path}'`}`,
    ),
    { code, errno: code === 'ENOSPC' ? -28 : -30, syscall, ...(path === undefined ? {} : { path }) },
  );

const { O_WRONLY, O_RDWR, O_CREAT, O_APPEND, O_TRUNC } = fs.constants;
const writes = (flags: unknown): boolean =>
  typeof flags === 'number'
    ? (flags & (O_WRONLY | O_RDWR | O_CREAT | O_APPEND | O_TRUNC)) !== 0
    : typeof flags === 'string' && /[wa+]/.test(flags);

/** Injected faults: jest spies on node's fs, restored on `writable`/`free`/`close`. */
const injectedDisk = (dir: string): FaultyDisk => {
  const spies: jest.SpyInstance[] = [];
  let full: jest.SpyInstance[] = [];
  const under = (path: unknown): boolean =>
    typeof path === 'string' && (path.startsWith(dir) || path.startsWith('/proc/self/fd/'));
  const failing = (name: keyof typeof fsPromises, when: (args: unknown[]) => boolean): jest.SpyInstance => {
    const original = fsPromises[name] as (...args: unknown[]) => unknown;
    return jest.spyOn(fsPromises, name as never).mockImplementation(((...args: unknown[]) => {
      if (when(args)) return Promise.reject(errno('EROFS', name, String(args[0])));
      return original.apply(fsPromises, args);
    }) as never);
  };
  const restore = (list: jest.SpyInstance[]): void => list.splice(0).forEach((spy) => spy.mockRestore());
  return {
    mode: 'injected',
    fill: () => {
      const callbackFails = (...args: unknown[]): void => {
        (args[args.length - 1] as (error: Error) => void)(errno('ENOSPC', 'write'));
      };
      // A kernel copy (copy_file_range) writes without write(2): on a full disk it fails alike.
      const copyFails = (_from: unknown, to: unknown): Promise<never> =>
        Promise.reject(errno('ENOSPC', 'copyfile', String(to)));
      full = [
        jest.spyOn(fs, 'write').mockImplementation(callbackFails),
        jest.spyOn(fs, 'writev').mockImplementation(callbackFails),
        jest.spyOn(fsPromises, 'copyFile').mockImplementation(copyFails),
      ];
      return Promise.resolve();
    },
    free: () => {
      restore(full);
      return Promise.resolve();
    },
    readOnly: () => {
      for (const name of ['mkdtemp', 'rename', 'unlink', 'rmdir', 'rm', 'symlink', 'chmod'] as const)
        spies.push(failing(name, (args) => under(args[0])));
      // As the kernel: mkdir of an existing dir reports that it exists (recursive: success) before EROFS.
      spies.push(failing('mkdir', (args) => under(args[0]) && !existsSync(String(args[0]))));
      spies.push(failing('open', (args) => under(args[0]) && writes(args[1])));
      spies.push(failing('copyFile', (args) => under(args[1])));
      return Promise.resolve();
    },
    writable: () => {
      restore(spies);
      return Promise.resolve();
    },
    close: () => {
      restore(spies);
      restore(full);
    },
  };
};

/** A tmpfs of `sizeBytes` mounted over `dir` (which must be empty). */
const tmpfsDisk = (dir: string, sizeBytes: number, freeBytes: number): FaultyDisk => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0755`, 'tmpfs', dir]);
  const ballast = join(dir, ballastName);
  // A remount read-only fails (EBUSY) while a file is open for writing there: the load journal is, until it has been
  // idle for a second. Retried for a few seconds, as an operator would.
  const remount = async (how: 'ro' | 'rw'): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        execFileSync('mount', ['-o', `remount,${how}`, dir], { stdio: 'pipe' });
        return;
      } catch (error) {
        if (attempt >= 30) throw error;
        await sleep(100);
      }
    }
  };
  let mounted = true;
  return {
    mode: 'tmpfs',
    fill: async () => {
      const { bavail, bsize } = await fsPromises.statfs(dir);
      const used = Math.max(0, bavail * bsize - freeBytes);
      await fsPromises.writeFile(ballast, Buffer.alloc(used));
    },
    free: () => fsPromises.rm(ballast, { force: true }),
    readOnly: () => remount('ro'),
    writable: () => remount('rw'),
    close: () => {
      if (!mounted) return;
      mounted = false;
      execFileSync('umount', ['-l', dir]);
    },
  };
};

/** The fault maker for `mode` over the empty model dir `dir`: `sizeBytes` of disk, `freeBytes` left free by `fill`. */
export const faultyDisk = (mode: DiskMode, dir: string, sizeBytes: number, freeBytes: number): FaultyDisk =>
  mode === 'tmpfs' ? tmpfsDisk(dir, sizeBytes, freeBytes) : injectedDisk(dir);
