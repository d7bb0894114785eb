/** guard: the checks that keep an archive inside its dir — each entry's path and link on the way in, every symlink's real end after. */
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, permanentError, type EffectError } from '../../core/errors';

/** What an archive entry is; `other` (devices, FIFOs, ...) is always refused. */
export type EntryKind = 'file' | 'dir' | 'symlink' | 'hardlink' | 'other';

// As Linux's MAXSYMLINKS: a chain longer than this is a loop or an attack.
const maxLinkHops = 40;
// As Linux's PATH_MAX and NAME_MAX: longer names cannot be written, and say so only as an fs error.
const maxNameBytes = 4096;
const maxPartBytes = 255;

/** Characters of a name a message quotes: the rest is counted, not shown. */
const maxQuotedChars = 200;

/**
 * `name` quoted for a message, cut after 200 characters: a name a store or an archive gives may be megabytes (a Hub
 * path, a pax header), and a refusal is logged at every attempt.
 */
export const quotedName = (name: string): string =>
  name.length > maxQuotedChars
    ? `${JSON.stringify(name.slice(0, maxQuotedChars))}… (${name.length} characters)`
    : JSON.stringify(name);

/** The `refused` EffectError for the entry `name` of the archive `what`. */
export const refusal = (what: string, name: string, why: string, cause?: unknown): EffectError =>
  permanentError('refused', `${what}: refusing archive entry ${quotedName(name)}: ${why}`, cause);

/**
 * The entry's path relative to the target dir ('' for the dir itself); refuses anything that could escape. The one
 * check of a stored name that becomes a path: archive entries and object-store keys alike.
 */
export const entryPathOf = (name: string, refuse: (why: string) => never): string => {
  if (name.includes('\0')) refuse('its name contains NUL');
  if (Buffer.byteLength(name) > maxNameBytes) refuse(`its name is longer than ${maxNameBytes} bytes`);
  if (name.startsWith('/') || name.startsWith('\\') || /^[a-zA-Z]:/.test(name))
    refuse('its path is absolute');
  // Backslashes count as separators: an archive made on Windows means them so, and tar treats them alike.
  const parts = name.split(/[/\\]+/).filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) refuse("its path contains '..'");
  if (parts.some((part) => Buffer.byteLength(part) > maxPartBytes)) {
    refuse(`a part of its name is longer than ${maxPartBytes} bytes`);
  }
  return parts.join('/');
};

/** Refuses a symlink stored at `entryPath` whose target is absolute or leads above the target dir. */
const checkLinkTarget = (entryPath: string, target: string, refuse: (why: string) => never): void => {
  if (target === '') refuse('its link target is empty');
  if (target.startsWith('/') || /^[a-zA-Z]:/.test(target)) refuse(`it links to the absolute path ${target}`);
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(entryPath), target));
  if (resolved === '..' || resolved.startsWith('../')) refuse(`it links to ${target}, outside the model dir`);
};

/**
 * Checks the entries of one archive (`what` in messages) in order, remembering its symlinks, so that no later entry
 * is written or hard-linked through one, and its paths, so that none replaces an earlier one (tar would, silently).
 * A refusal is a permanent `refused` naming the entry; a second entry at one path, a permanent `invalid-archive`.
 */
/** A part of the paths of the symlinks let in; `link` where one ends. */
interface LinkNode {
  readonly children: Map<string, LinkNode>;
  link?: boolean;
}

export class EntryGuard {
  // The symlinks let in, as a tree of their paths' parts: an entry's path is walked down once (its name may be
  // 4 KiB: each dir above it built and looked up anew took 80 ms of CPU an entry 2,000 dirs deep).
  private readonly links: LinkNode = { children: new Map() };
  private readonly seen = new Map<string, EntryKind>();

  constructor(private readonly what: string) {}

  /** The first symlink let in at `parts` or above it, as a path, if any. */
  private linkAt(parts: ReadonlyArray<string>): string | undefined {
    let node: LinkNode | undefined = this.links;
    for (let i = 0; i < parts.length && node !== undefined; i++) {
      node = node.children.get(parts[i]!);
      if (node?.link === true) return parts.slice(0, i + 1).join('/');
    }
    return undefined;
  }

  private addLink(parts: ReadonlyArray<string>): void {
    let node = this.links;
    for (const part of parts) {
      let child = node.children.get(part);
      if (child === undefined) node.children.set(part, (child = { children: new Map() }));
      node = child;
    }
    node.link = true;
  }

  /** The entry's path relative to the target dir, or a throw when the entry must not be extracted. */
  check(name: string, kind: EntryKind, linkTarget = ''): string {
    const refuse = (why: string): never => {
      throw refusal(this.what, name, why);
    };
    const entryPath = entryPathOf(name, refuse);
    const parts = entryPath.split('/');
    const through = this.linkAt(parts);
    if (through !== undefined) refuse(`it would be written through the symlink ${through}`);
    if (kind === 'other') refuse('it is not a file, directory or link');
    if (entryPath === '' && kind !== 'dir') refuse('it would replace the model dir');
    const before = this.seen.get(entryPath);
    if (before !== undefined && !(before === 'dir' && kind === 'dir')) {
      throw permanentError(
        'invalid-archive',
        `${this.what}: invalid archive: entry ${quotedName(name)} appears twice`,
      );
    }
    this.seen.set(entryPath, kind);
    if (kind === 'symlink') {
      checkLinkTarget(entryPath, linkTarget, refuse);
      this.addLink(parts);
    }
    if (kind === 'hardlink') {
      const target = entryPathOf(linkTarget, (why) => refuse(`its link target is refused: ${why}`));
      if (target === '') refuse('it hard-links the model dir');
      if (this.linkAt(target.split('/')) !== undefined) {
        refuse(`it hard-links through the symlink ${linkTarget}`);
      }
    }
    return entryPath;
  }
}

/**
 * Resolves the link target `rest` from the real dir `from` (from `/` when absolute), following symlinks hop by
 * hop; missing parts are taken as written.
 */
const resolveFrom = async (from: string, rest: string, hops: { left: number }): Promise<string> => {
  let current = path.isAbsolute(rest) ? '/' : from;
  for (const part of rest.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    const info = await lstat(next).catch(() => undefined);
    if (info?.isSymbolicLink() !== true) {
      current = next;
      continue;
    }
    if (--hops.left < 0) throw new Error('too many levels of symlinks');
    const target = await readlink(next);
    current = await resolveFrom(current, target, hops);
  }
  return current;
};

/**
 * Checks where every symlink under `root` really leads: links checked one by one can combine (`a -> .` then
 * `b -> a/..`) into a way out. Such a chain, or a loop, is `refused`, naming the link.
 */
export const checkLinksInside = async (root: string, what: string, dir = root): Promise<void> => {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      await checkLinksInside(root, what, at);
    } else if (entry.isSymbolicLink()) {
      const shown = path.relative(root, at);
      const resolved = await readlink(at)
        .then((target) => resolveFrom(dir, target, { left: maxLinkHops }))
        .catch((cause: unknown) => {
          throw refusal(what, shown, errorMessage(cause), cause);
        });
      const relative = path.relative(root, resolved);
      if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
        throw refusal(what, shown, 'it leads outside the model dir');
      }
    }
  }
};
