/** localSource: where a local storageUri may be read from — inside the allowed roots, never the kernel's files. */
import { realpath, statfs } from 'node:fs/promises';
import path from 'node:path';
import { permanentError, type EffectError } from '../../core/errors';

// statfs f_type magic numbers (linux/magic.h) of the filesystems that expose the kernel and processes, not files.
const pseudoFilesystems = new Map<number, string>([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0xcafe4a11, 'bpf'],
  [0x62656570, 'configfs'],
  [0xde5e81e4, 'efivarfs'],
  [0x6165676c, 'pstore'],
  [0xf97cff8c, 'selinuxfs'],
  [0x43415d53, 'smackfs'],
  [0x65735543, 'fusectl'],
  [0x19800202, 'mqueue'],
  [0x42494e4d, 'binfmt_misc'],
  [0x6e736673, 'nsfs'],
  [0x7655821, 'resctrl'],
]);

// Refused by path as well: /dev is a devtmpfs, which statfs cannot tell from any tmpfs.
const systemDirs = ['/proc', '/sys', '/dev'];

/**
 * True when `candidate` is `root` or lies below it (both absolute and resolved). Only a `..` step leaves it: a name
 * that starts with two dots (`..data` of a projected volume, `..archive`) lies inside.
 */
export const isInside = (root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate);
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
};

/** The name of the pseudo filesystem (`proc`, `sysfs`, ...) `at` lies on, by its statfs type; undefined for others. */
export const pseudoFilesystemAt = async (at: string): Promise<string | undefined> =>
  // f_type is a signed long on some platforms: compare its 32 bits.
  pseudoFilesystems.get((await statfs(at)).type >>> 0);

const refused = (what: string, why: string): EffectError =>
  permanentError('refused', `${what}: refused: ${why}`);

/**
 * Refuses (`refused`, permanent) a resolved path under /proc, /sys or /dev or on a pseudo filesystem: what lies
 * there is the system's (`/proc/self/environ` is this process's environment, download tokens included).
 */
export const checkNotSystem = async (real: string, what: string): Promise<void> => {
  const system = systemDirs.find((dir) => isInside(dir, real));
  if (system !== undefined) {
    throw refused(what, `it lies under ${system}, which holds no models but the system's own files`);
  }
  const pseudo = await pseudoFilesystemAt(real);
  if (pseudo !== undefined) {
    throw refused(
      what,
      `it lies on a ${pseudo} filesystem, which holds no models but the kernel's own files`,
    );
  }
};

/**
 * Refuses a local source `real` (its links resolved) that is the system's (checkNotSystem) or lies outside every
 * root of `roots` (each resolved too; a missing root allows nothing); no roots turn local storage off. `rootsName`
 * is what the user calls the roots (the CLI's flag), named in the refusal.
 */
export const checkLocalSource = async (
  real: string,
  roots: ReadonlyArray<string>,
  what: string,
  rootsName: string,
): Promise<void> => {
  await checkNotSystem(real, what);
  if (roots.length === 0) throw refused(what, `local storage is off (${rootsName} is empty)`);
  const resolved = await Promise.all(roots.map((root) => realpath(root).catch(() => undefined)));
  if (!resolved.some((root) => root !== undefined && isInside(root, real))) {
    throw refused(what, `it lies outside ${rootsName} (${roots.join(', ')})`);
  }
};
