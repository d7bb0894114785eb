/**
 * The node cache (`--node-cache-dir`): each stored content once per node, as a model dir of its own named by a hash
 * of its identity, filled from and into by hard links; see docs/operating.md, The node cache.
 */
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdtemp, readdir, rename, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../core/errors';
import type { ModelName } from '../core/model-name';
import type { CacheTake, Filled, NodeCache, Staged } from '../ports';
import {
  fileSizes,
  lockFile,
  makeDirs,
  openDir,
  removeTree,
  step,
  syncListed,
  type HeldLock,
  type OpenDir,
} from '../fs';
import type { Logger } from '../log';
import { fillFromModelDir, type StagingOf } from './fill-from';
import { markStagingDir } from './staging-dir';
import { evictNodeCache, type EvictionBudget } from './node-cache-eviction';

/** Entries and the files in them are read-only: a model server that does not own them cannot change them. */
const entryFileMode = 0o444;
// How long a pod waits for another's download before downloading itself: a lock held longer (stuck, hostile) costs
// the node a second download, never a model that does not come.
const lockWaitMs = 10 * 60_000;

/** Where an identity's entry and its lock live under `root`: named by a hash, so no identity names a path. */
const entryPaths = (root: string, identity: string): { entry: string; lock: string; tmpPrefix: string } => {
  const key = createHash('sha256').update(identity).digest('hex');
  return { entry: join(root, key), lock: join(root, `${key}.lock`), tmpPrefix: `.tmp-${key}-` };
};

/**
 * The node cache at `root` for a store whose installed models are at `modelDir(name)` and whose staging dirs are
 * `stagingOf(staged)`. Each fill is checked as one from another model dir is (`fillFromModelDir`): an entry planted
 * or cut short is not used.
 */
export const nodeCacheStore = (
  { dir: root, ...budget }: { readonly dir: string } & EvictionBudget,
  modelDir: (name: ModelName) => string,
  stagingOf: (staged: Staged) => StagingOf,
  storeLog: Logger,
): NodeCache => {
  const log = storeLog.child({ component: 'node-cache' });
  // By hard links, either way: an entry's files are read-only, so the model server cannot write through one.
  const fill = (
    into: StagingOf,
    path: string,
    signal: AbortSignal,
    target = into.target,
    installed?: { readonly dev: number; readonly ino: number },
  ) =>
    fillFromModelDir({
      ...into,
      target,
      source: into.name,
      path,
      signal,
      log,
      link: true,
      installed,
    });

  const fillFromEntry = async (
    entry: string,
    into: StagingOf,
    signal: AbortSignal,
  ): Promise<Filled | undefined> => {
    const found = await lstat(entry).catch((cause: unknown) => {
      if (errorCode(cause) === 'ENOENT') return undefined;
      throw cause;
    });
    if (found === undefined) return undefined;
    const filled = await fill(into, entry, signal);
    // Its last use, for eviction (the entry's own mtime: no file of it changes).
    if (filled !== undefined) await utimes(entry, new Date(), new Date()).catch(() => undefined);
    return filled;
  };

  /**
   * Puts the installed `M/<name>` into the cache as `entry`, releases `lock`, then evicts; resolves to the entries
   * evicted. Failures are logged, not thrown.
   */
  const publish = async (
    entry: string,
    tmpPrefix: string,
    into: StagingOf,
    lock: HeldLock,
    installed: { readonly dev: number; readonly ino: number },
  ): Promise<{ evicted: number }> => {
    let tmp: OpenDir | undefined;
    try {
      const made = await step(`cannot create a dir in ${root}`, () => mkdtemp(join(root, tmpPrefix)));
      tmp = { ...(await openDir(made)), path: made };
      const never = new AbortController().signal;
      // The dir this process filled (its staging dir, renamed into place), not whatever holds its path now: a model
      // server that put its own dir there (a copied marker, files of the same sizes) would give every pod on the
      // node its bytes.
      const filled = await fill(into, modelDir(into.name), never, tmp, installed);
      if (filled === undefined) {
        await removeTree(made);
        return { evicted: 0 };
      }
      const files = await fileSizes(tmp);
      for (const file of files.keys()) await chmod(join(made, file), entryFileMode);
      const written = await markStagingDir(tmp, {
        name: into.name,
        spec: into.spec,
        signal: never,
        log,
        written: files,
      });
      // Whatever holds the entry's name failed the check this process made under the lock (planted, cut short):
      // it goes, unfollowed (removeTree unlinks a link).
      await removeTree(entry).catch(() => undefined);
      await step(`cannot rename ${made} to ${entry}`, () => rename(made, entry));
      log.info({ model: into.name, entry, files: files.size }, 'model put into the node cache');
      // The others go on now, and the entry is flushed meanwhile (through the handle): flushed first, it held them up
      // by the time to write the whole model out (256 MiB: seconds here).
      await lock.release();
      // What this publish wrote (its files, the marker, their dirs), not a walk of whatever the entry holds by then.
      await syncListed(tmp, written).catch((err: unknown) =>
        log.warn({ err, entry }, 'could not flush a node cache entry; a fill checks its sizes'),
      );
    } catch (err) {
      log.warn({ err, model: into.name, entry }, 'could not put the model into the node cache');
      if (tmp !== undefined) await removeTree(tmp.path).catch(() => undefined);
    } finally {
      await tmp?.handle.close().catch(() => undefined);
      await lock.release();
    }
    // The new entry is linked from this model dir, so no sweep takes it; older ones may go now.
    const evicted = await evictNodeCache(root, budget, log).catch((err: unknown) => {
      log.warn({ err }, 'could not evict from the node cache');
      return [];
    });
    return { evicted: evicted.length };
  };

  // Made at the first take that needs it, and again only after a take failed (the dir removed under us, say).
  let rootMade: Promise<unknown> | undefined;
  const makeRoot = (): Promise<unknown> =>
    (rootMade ??= step(`cannot create the node cache dir ${root}`, () => makeDirs(root, 0o755)));

  const takeEntry = async (identity: string, into: StagingOf, signal: AbortSignal): Promise<CacheTake> => {
    const { entry, lock, tmpPrefix } = entryPaths(root, identity);
    await makeRoot();
    const hit = await fillFromEntry(entry, into, signal);
    if (hit !== undefined) return { _tag: 'Filled', filled: hit };
    // Another process on the node may be downloading it: wait for its lock, then look again.
    const held = await lockFile(lock, lockWaitMs, signal);
    try {
      const after = await fillFromEntry(entry, into, signal);
      if (after !== undefined) {
        await held.release();
        return { _tag: 'Filled', filled: after };
      }
      // What a publisher of this identity killed mid-way left: only a holder of its lock ever writes one.
      for (const name of await readdir(root))
        if (name.startsWith(tmpPrefix)) await removeTree(join(root, name));
    } catch (error) {
      await held.release();
      throw error;
    }
    // The staging dir the download fills is the dir its commit renames into place: the only one to publish.
    const staging = await into.target.handle.stat().catch(async (error: unknown) => {
      await held.release();
      throw error;
    });
    const installed = { dev: staging.dev, ino: staging.ino };
    return {
      _tag: 'Claimed',
      publish: () => publish(entry, tmpPrefix, into, held, installed),
      release: held.release,
    };
  };

  return {
    take: (identity, staged, signal) =>
      takeEntry(identity, stagingOf(staged), signal).catch((error: unknown) => {
        rootMade = undefined;
        throw error;
      }),
  };
};
