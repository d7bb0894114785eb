/**
 * The storage initializer's edge: the agent's storage router, filling a dest dir through a fresh staging dir
 * inside it (one file system: entries are renamed in, never copied), every dir held open and never followed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { lstat, mkdtemp, readdir, rename } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import type { Env } from '../core/env';
import { EffectError, errorCode, permanentError, retryableError } from '../core/errors';
import { flagTable, type AppConfig } from '../core/flags/app-config';
import {
  entryKind,
  fileSizes,
  fsError,
  linkMissing,
  makeDirs,
  mountWatches,
  namingDirs,
  openDir,
  removeTree,
  spaceCheck,
  step,
  type OpenDir,
  type SpaceCheck,
} from '../fs';
import { openFreshStagingDir } from '../model-dir';
import type { DownloadFunction, DownloadProgress } from '../ports';
import { storageRouter } from './storage';

// Reserved in a dest: an entry named so is a staging dir of ours, and once no run is filling it, a crashed one's.
const stagingPrefix = '.modelsync-download-';

const refusedDest = (dest: string, found: string): EffectError =>
  permanentError(
    'refused',
    `refusing dest ${dest}: it is ${found}, not a directory (the storage initializer writes only into a real directory and follows no link)`,
  );

/** The lstat of `at` (`shown` in a failure), undefined when nothing is there. */
const lstatIfAny = (at: string, shown: string) =>
  lstat(at).catch((cause: unknown) => {
    if (errorCode(cause) === 'ENOENT') return undefined;
    throw fsError(`cannot read ${shown}`, cause);
  });

/** Opens `dest` as a real dir, made with its parents when missing; a link or anything else there is refused. */
const openDest = async (dest: string): Promise<OpenDir> => {
  const found = await lstatIfAny(dest, dest);
  if (found === undefined) await step(`cannot create ${dest}`, () => makeDirs(dest));
  else if (!found.isDirectory()) throw refusedDest(dest, entryKind(found));
  try {
    return await openDir(dest);
  } catch (cause) {
    // Swapped for a link or a file since the look: O_NOFOLLOW | O_DIRECTORY refuse it.
    if (['ELOOP', 'ENOTDIR'].includes(errorCode(cause) ?? ''))
      throw refusedDest(dest, 'no longer a directory');
    throw fsError(`cannot open ${dest}`, cause);
  }
};

/** Removes the staging dirs an earlier run left in `dest` (killed mid-download), link-safely. */
const removeStaleStaging = async (dest: OpenDir, log: Logger): Promise<void> => {
  const names = await step(`cannot list ${dest.path}`, () => readdir(dest.ref));
  for (const name of names.filter((entry) => entry.startsWith(stagingPrefix))) {
    log.warn({ dest: dest.path, dir: name }, 'removing a staging dir an earlier run left behind');
    await removeTree(`${dest.ref}/${name}`);
  }
};

/**
 * Makes a fresh staging dir inside `dest` and, in the same turn (so no stop signal can come in between: hence
 * mkdtempSync, one mkdir), arms its removal the moment `signal` aborts. Synchronously, on purpose: the process
 * entry exits right after a stop signal unsubscribes us, before an async cleanup would have run; and nothing can
 * be created in a removed dir, so a write still in flight cannot bring it back. rmSync unlinks a link, never
 * follows one. Returns its name and what disarms the removal (once its entries are being moved into dest).
 */
const makeStaging = (
  dest: OpenDir,
  signal: AbortSignal,
  log: Logger,
): { readonly name: string; readonly stopRemovingOnAbort: () => void } => {
  let made: string;
  try {
    made = mkdtempSync(`${dest.ref}/${stagingPrefix}`);
  } catch (cause) {
    throw fsError(`cannot create a staging dir in ${dest.path}`, cause);
  }
  const name = basename(made);
  const remove = (): void => {
    try {
      rmSync(made, { recursive: true, force: true });
    } catch (err) {
      log.warn({ err, dir: join(dest.path, name) }, 'cannot delete a staging dir; the next run will');
    }
  };
  signal.addEventListener('abort', remove, { once: true });
  return { name, stopRemovingOnAbort: () => signal.removeEventListener('abort', remove) };
};

/**
 * Renames each top-level entry of `staging` into `dest`, all or none: an entry of the same name is first renamed
 * aside (a link as a link, never followed) into a dir inside `staging`, so that a rename failing part-way puts
 * the old entries back and takes the new ones out; the aside dir goes with `staging`. Only when that undoing fails
 * too does the failure say which names in dest are new and which are gone.
 */
const moveEntries = async (staging: OpenDir, dest: OpenDir): Promise<ReadonlyArray<string>> => {
  const names = await step(`cannot list ${staging.path}`, () => readdir(staging.ref));
  const aside = basename(
    await step(`cannot create a dir in ${staging.path}`, () =>
      mkdtemp(`${staging.ref}/${stagingPrefix}old-`),
    ),
  );
  const movedAside: string[] = [];
  const movedIn: string[] = [];
  try {
    for (const name of names) {
      const target = `${dest.ref}/${name}`;
      if ((await lstatIfAny(target, join(dest.path, name))) !== undefined) {
        await step(`cannot move ${join(dest.path, name)} aside`, () =>
          rename(target, `${staging.ref}/${aside}/${name}`),
        );
        movedAside.push(name);
      }
      await step(`cannot move ${join(staging.path, name)} into ${dest.path}`, () =>
        rename(`${staging.ref}/${name}`, target),
      );
      movedIn.push(name);
    }
    return names;
  } catch (cause) {
    const left = await putBack(dest, `${staging.ref}/${aside}`, movedIn, movedAside);
    if (left === undefined) throw cause;
    // The failure as it was (its kind, whether a retry may mend it), saying what dest is left with.
    const failed = fsError(`cannot move into ${dest.path}`, cause);
    throw new EffectError(`${failed.message}; putting dest back failed too, ${left}`, failed.retryable, {
      kind: failed.kind,
      cause,
    });
  }
};

/** Undoes moveEntries' renames so far; undefined when done, else what dest is left with. */
const putBack = async (
  dest: OpenDir,
  aside: string,
  movedIn: ReadonlyArray<string>,
  movedAside: ReadonlyArray<string>,
): Promise<string | undefined> => {
  const stillNew: string[] = [];
  const gone: string[] = [];
  for (const name of movedIn) await removeTree(`${dest.ref}/${name}`).catch(() => stillNew.push(name));
  for (const name of movedAside)
    await rename(`${aside}/${name}`, `${dest.ref}/${name}`).catch(() => gone.push(name));
  if (stillNew.length === 0 && gone.length === 0) return undefined;
  return `${dest.path} holds the new ${stillNew.join(', ') || 'nothing'} and lacks the old ${gone.join(', ') || 'nothing'}`;
};

const abortedInto = (dest: OpenDir, signal: AbortSignal): EffectError =>
  retryableError('aborted', `downloading into ${dest.path} aborted`, signal.reason);

/**
 * A dir of dest holding what an earlier pair of this run wrote, which the staging dir brings again, is merged rather
 * than replaced: KServe's initializer writes every pair straight into its dest, so two pairs' files under one dir
 * (weights and config from two URIs; a tokenizer's dest below the base model's) both stay, the later pair's where
 * both hold a name.
 */
const keepEarlier = async (dest: OpenDir, staging: OpenDir, name: string): Promise<void> => {
  const [before, now] = await Promise.all([
    lstatIfAny(`${dest.ref}/${name}`, join(dest.path, name)),
    lstatIfAny(`${staging.ref}/${name}`, join(staging.path, name)),
  ]);
  if (before?.isDirectory() !== true || now?.isDirectory() !== true) return;
  await step(`cannot keep ${join(dest.path, name)} beside the new files`, () =>
    linkMissing(`${dest.ref}/${name}`, `${staging.ref}/${name}`),
  );
};

interface FillOptions {
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly space: SpaceCheck;
  /** The absolute paths of the entries earlier pairs of this run moved into their dests (kept up to date). */
  readonly written: Set<string>;
}

/**
 * Whether `entry` (an absolute path) holds what this run wrote: an entry an earlier pair moved in is it, lies
 * below it (that pair's dest was below), or holds it (this dest is below what that pair moved in).
 */
const holdsWritten = (written: ReadonlySet<string>, entry: string): boolean =>
  [...written].some((path) => path === entry || path.startsWith(`${entry}/`) || entry.startsWith(`${path}/`));

/**
 * Fills `destPath` through a staging dir `fill` writes into, as docs/storage.md ("Storage initializer", Into place)
 * says. Resolves with the bytes `fill` resolved with, or when it knew none, those of the regular files that landed.
 */
const fillDest = async (
  destPath: string,
  fill: (dir: string) => Promise<number | undefined>,
  { signal, log, space, written }: FillOptions,
): Promise<number> => {
  const dest = await openDest(destPath);
  let made: ReturnType<typeof makeStaging> | undefined;
  let staging: OpenDir | undefined;
  try {
    await removeStaleStaging(dest, log);
    await space(dest.path, 0, `downloading into ${dest.path}`);
    if (signal.aborted) throw abortedInto(dest, signal);
    made = makeStaging(dest, signal, log);
    // Held open, as the model store holds its own.
    staging = await openFreshStagingDir(`${dest.ref}/${made.name}`, join(dest.path, made.name));
    if (signal.aborted) throw abortedInto(dest, signal);
    const reported = await fill(staging.ref);
    if (signal.aborted) throw abortedInto(dest, signal);
    const bytes = reported ?? [...(await fileSizes(staging)).values()].reduce((sum, size) => sum + size, 0);
    const names = await step(`cannot list ${staging.path}`, () => readdir(staging!.ref));
    for (const name of names.filter((entry) => holdsWritten(written, join(dest.path, entry))))
      await keepEarlier(dest, staging, name);
    // From here on a stop lets the renames finish: dest gets all the new entries, not some of them.
    made.stopRemovingOnAbort();
    for (const name of await moveEntries(staging, dest)) written.add(join(dest.path, name));
    return bytes;
  } catch (cause) {
    const error = signal.aborted ? cause : fsError(`cannot download into ${dest.path}`, cause);
    throw namingDirs(error, staging === undefined ? [dest] : [staging, dest]);
  } finally {
    await staging?.handle.close();
    if (made !== undefined) {
      made.stopRemovingOnAbort();
      const shown = join(dest.path, made.name);
      await removeTree(`${dest.ref}/${made.name}`).catch((err: unknown) =>
        log.warn({ err, dir: shown }, 'cannot delete a staging dir; the next run will'),
      );
    }
    await dest.handle.close();
  }
};

/** Downloads for the storage initializer: into dest dirs, through the agent's storage router. */
export interface InitializerStorage {
  /** The schemes the router serves: a URI of another fails before anything is written. */
  readonly schemes: ReadonlyArray<string>;
  /**
   * As the agent's download, into a dest dir (`targetDir`) laid out as `<model-dir>/<name>/` (see fillDest); the
   * request's `select`: KServe's patterns. Resolves with the bytes moved (a local copy reports none: the bytes of
   * the files). Throws an EffectError.
   */
  readonly download: (...args: Parameters<DownloadFunction>) => Promise<{ readonly bytes: number }>;
  /** Closes the router's connections. */
  readonly close: () => Promise<void>;
}

/**
 * The storage initializer's downloads for `config`: the agent's `storageRouter` (the same providers, caps, guards
 * and credentials from `env`) with the disk check of `--min-free-bytes`; the Left as for the agent.
 */
export const initializerStorage = (
  config: AppConfig,
  log: Logger,
  env: Env,
): E.Either<string, InitializerStorage> => {
  const space = spaceCheck(config.minFreeBytes, { reserveName: flagTable.minFreeBytes.flag });
  const router = storageRouter(config, log, env, space);
  if (E.isLeft(router)) return router;
  const { download, network } = router.right;
  // One watch a dest for the whole run: once its mount is found hung, the retries fail at once, taking no thread.
  const watchOf = mountWatches({ log, what: 'the dest' });
  // Where this run's pairs moved their entries so far, whatever their dests (keepEarlier).
  const written = new Set<string>();
  return E.right({
    schemes: download.schemes,
    download: async (uri, dest, signal, progress, request) => {
      let moved: number | undefined;
      const report = (reported: DownloadProgress): void => {
        if (reported.done) moved = reported.bytes;
        progress?.(reported);
      };
      const fill = (dir: string) => download(uri, dir, signal, report, request).then(() => moved);
      const at = resolve(dest);
      return { bytes: await watchOf(at)(() => fillDest(at, fill, { signal, log, space, written })) };
    },
    close: () => network.close(),
  });
};
