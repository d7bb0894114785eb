/** configDirSource: the config dir as a ConfigSource: watch events that outlive errors and dir removal, and reads. */
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { Logger } from 'pino';
import {
  concatMap,
  defer,
  exhaustMap,
  filter,
  first,
  map,
  merge,
  Observable,
  repeat,
  retry,
  takeUntil,
  Subject,
  tap,
  timer,
} from 'rxjs';
import { configFileName } from '../core/config-files';
import { errorCode } from '../core/errors';
import { lazyModule } from '../core/lazy-module';
import { entryKind } from '../fs';
import { readConfigFile, withDeadline, type ConfigReadOptions } from './config-file';
import type { ConfigSource, FsEvent } from '../ports';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded for --watch-poll-ms alone */
const chokidar = lazyModule(() => require('chokidar') as typeof import('chokidar'));

/** The config dir, and how it is watched and read. */
export interface ConfigDirOptions extends ConfigReadOptions {
  readonly dir: string;
  readonly log: Logger;
  /** How often to look for a missing config dir, and the pause before re-arming a failed watch. */
  readonly recheckMs?: number;
  /**
   * How often the dir of an armed watch is stat'ed (default `recheckMs`): the watch's sign of life while quiet, and
   * the backstop for a replaced dir, which inotify reports at once. Each check wakes an idle process.
   */
  readonly armedRecheckMs?: number;
  /** Poll with stat every this many ms instead of inotify (NFS, some bind mounts); 0 = inotify. */
  readonly pollMs?: number;
  /** The setting of `pollMs`, as the caller names it (the CLI: `--watch-poll-ms`), for an inotify watch refused. */
  readonly pollName?: string;
  /** One watch of the dir (default: `fs.watch`, or chokidar polling at `pollMs`); tests inject failing ones. */
  readonly watchDir?: (dir: string, pollMs: number) => Observable<FsEvent>;
  /** A read of models.json that takes longer is given up and logged (a hung mount); default 10 s. */
  readonly readTimeoutMs?: number;
  /**
   * Called whenever the watch shows it works (Telemetry.watcherAlive): when watching starts, at every event, at
   * every `armedRecheckMs` stat that finds the dir unchanged under an armed watch (one that sent `ready`), and while
   * the dir is missing (nothing to watch yet). A watch that never arms, keeps failing, or whose stat hangs, does not.
   */
  readonly onAlive?: () => void;
}

/** The inode of `dir` while it is a directory, else undefined. */
const inodeOf = (dir: string): Promise<number | undefined> =>
  stat(dir).then(
    (stats) => (stats.isDirectory() ? stats.ino : undefined),
    () => undefined,
  );

/** What is at `dir`: `directory`, nothing (`missing`), or what else it is, in words (`a regular file`). */
const foundAt = (dir: string): Promise<string> =>
  stat(dir).then(
    (stats) => (stats.isDirectory() ? 'directory' : entryKind(stats)),
    () => 'missing',
  );

/**
 * Emits once, when `dir` exists as a directory (chokidar never notices a dir that appears later). While it waits,
 * one warn line says what is there: nothing, or an entry that is no directory (`--config-dir` naming models.json).
 */
const directoryExists = (
  dir: string,
  recheckMs: number,
  log: Logger,
  onAlive: () => void,
  missing = 'config dir does not exist; waiting for it',
): Observable<true> => {
  let told: string | undefined;
  // exhaustMap: a tick while a stat hangs (a dead mount) is dropped, not queued (one per tick, without end).
  return timer(0, recheckMs).pipe(
    exhaustMap(() => foundAt(dir)),
    tap((found) => {
      if (found === 'directory' || found === told) return;
      told = found;
      if (found === 'missing') log.warn({ configDir: dir }, missing);
      else
        log.warn({ configDir: dir, found }, 'config dir is not a directory; waiting for a directory there');
    }),
    tap((found) => {
      if (found !== 'directory') onAlive();
    }),
    first((found) => found === 'directory'),
    map((): true => true),
  );
};

/** The kernel limit behind each errno `fs.watch` gives when inotify is refused, which Node's message does not name. */
const inotifyLimits: Readonly<Record<string, string>> = {
  // inotify_init1: the uid's instances (shared by every container on the node that runs as it), or the open files.
  EMFILE:
    "the uid's inotify instances are used up (fs.inotify.max_user_instances on the node, shared by every process " +
    'of this uid), or the open files of the process (ulimit -n)',
  // inotify_add_watch: not the disk.
  ENOSPC: "the uid's inotify watches are used up (fs.inotify.max_user_watches on the node), not the disk",
};

/**
 * The error of an inotify watch of `dir` that the kernel refused for one of its limits, naming it (Node says only
 * "too many open files" or "no space left on device"); `code` kept. Any other error as it is.
 */
const watchRefused = (dir: string, error: unknown, pollName: string): unknown => {
  const code = errorCode(error);
  const limit = code !== undefined ? inotifyLimits[code] : undefined;
  if (limit === undefined) return error;
  return Object.assign(
    new Error(`cannot watch ${dir} (${code}): ${limit}; raise the limit, or poll instead with ${pollName}`),
    { code },
  );
};

/**
 * One inotify watch of `dir` (`fs.watch`): every rename and write of a child, as it happens, with nothing in
 * between (measured: chokidar reported `..data` in only about half of fast swaps and added 1-2.4 ms per event).
 * Emits `ready` once armed; errors when the watch does; the inode recheck around it notices the dir going.
 */
const fsWatchOnce = (dir: string, pollName: string): Observable<FsEvent> =>
  new Observable<FsEvent>((subscriber) => {
    let watcher: FSWatcher;
    try {
      watcher = fsWatch(dir, { persistent: true });
    } catch (error) {
      subscriber.error(watchRefused(dir, error, pollName));
      return undefined;
    }
    watcher.on('change', (eventType, filename) =>
      subscriber.next({ event: eventType, name: typeof filename === 'string' ? filename : '' }),
    );
    watcher.on('error', (error) => subscriber.error(error));
    subscriber.next({ event: 'ready', name: '' });
    return () => watcher.close();
  });

/**
 * One chokidar watch of `dir`, polling every `pollMs`; completes when the dir itself is removed, errors when chokidar
 * reports one. The measured-safe settings (docs/background.md): watch the DIRECTORY (a file watch dies after the
 * first swap), do not follow links (the swap is then reported at the rename itself, with no recursion into
 * `..<timestamp>` dirs and no ELOOP storms), and only direct children.
 */
const chokidarWatchOnce = (dir: string, pollMs: number): Observable<FsEvent> =>
  new Observable<FsEvent>((subscriber) => {
    const watcher = chokidar().watch(dir, {
      ignoreInitial: true,
      followSymlinks: false,
      depth: 0,
      usePolling: true,
      interval: pollMs,
    });
    watcher.on('all', (event, path) => {
      const name = relative(dir, path);
      subscriber.next({ event, name });
      // Completing (and so closing chokidar) inside its own unlinkDir handler leaks an fs.watch handle that
      // keeps the process alive; let chokidar finish handling the removal first.
      if (name === '' && event === 'unlinkDir') setTimeout(() => subscriber.complete(), 0);
    });
    watcher.on('ready', () => subscriber.next({ event: 'ready', name: '' }));
    watcher.on('error', (error) => subscriber.error(error));
    return () => void watcher.close();
  });

const defaultWatch =
  (pollName: string) =>
  (dir: string, pollMs: number): Observable<FsEvent> =>
    pollMs > 0 ? chokidarWatchOnce(dir, pollMs) : fsWatchOnce(dir, pollName);

/**
 * Watches `dir` until its inode is gone or changed: chokidar misses the root's removal about one run in six, and
 * neither watch notices a dir re-created under the same name. The inode is checked every `armedRecheckMs` and at
 * an event of the dir's own name; once the watch is armed (`ready`), that stat is its sign of life while quiet.
 */
const watchWhileDirExists = (
  dir: string,
  pollMs: number,
  armedRecheckMs: number,
  watchDir: (dir: string, pollMs: number) => Observable<FsEvent>,
  onAlive: () => void,
): Observable<FsEvent> =>
  defer(() => inodeOf(dir)).pipe(
    concatMap((inode) => {
      let armed = false;
      const ownName = basename(dir);
      // inotify reports the watched dir's own removal as a rename of its name: check at once, not at the next tick.
      const selfEvent$ = new Subject<void>();
      // One stat at a time for each, the rest dropped: behind a stat that hangs (a dead mount) nothing queues up.
      // Apart, so an event's stat never waits for (or is dropped behind) a periodic one that started before it.
      const stat = () => inodeOf(dir);
      const replaced$ = merge(
        timer(armedRecheckMs, armedRecheckMs).pipe(exhaustMap(stat)),
        selfEvent$.pipe(exhaustMap(stat)),
      ).pipe(
        tap((current) => {
          if (armed && current === inode) onAlive();
        }),
        filter((current) => current !== inode),
      );
      return watchDir(dir, pollMs).pipe(
        tap((event) => {
          // Armed is not yet alive: a watch that errors right after arming must not count as working.
          if (event.event === 'ready') armed = true;
          else onAlive();
          if (event.name === ownName) selfEvent$.next();
        }),
        takeUntil(replaced$),
      );
    }),
  );

/** How the watch of the config dir is doing, for `/healthz`. */
export interface ConfigDirStatus {
  readonly source: 'config-dir';
  /** `performance.now()` of the last sign of a working watch (see `onAlive`); absent before watching starts. */
  readonly lastAliveAt?: number;
}

/** A ConfigSource over the config dir, with the state of its watch. */
export interface ConfigDirSource extends ConfigSource {
  status(): ConfigDirStatus;
}

/**
 * The config dir as a ConfigSource. Watch errors are logged and the watch re-armed; the stream never ends by
 * itself. Reads are bounded in size and time; a read that hung and finally returned triggers a new one.
 */
export const configDirSource = (options: ConfigDirOptions): ConfigDirSource => {
  const { dir, log, recheckMs = 1000, pollMs = 0, pollName = 'pollMs', readTimeoutMs = 10_000 } = options;
  const watchDir = options.watchDir ?? defaultWatch(pollName);
  const armedRecheckMs = options.armedRecheckMs ?? recheckMs;
  let lastAliveAt: number | undefined;
  const onAlive = (): void => {
    lastAliveAt = performance.now();
    options.onAlive?.();
  };
  const lateReturn$ = new Subject<FsEvent>();
  const read = withDeadline(
    () => readConfigFile(dir, options),
    join(dir, configFileName),
    readTimeoutMs,
    () => lateReturn$.next({ event: 'change', name: configFileName }),
  );
  // After a watch ended with its dir (removed, or replaced by another), what is there is told once: the removal, or
  // nothing when a dir is back already.
  let rearms = 0;
  const watch$ = defer(() =>
    directoryExists(
      dir,
      recheckMs,
      log,
      onAlive,
      rearms > 0 ? 'config dir removed; waiting for it to come back' : undefined,
    ),
  ).pipe(
    concatMap(() => watchWhileDirExists(dir, pollMs, armedRecheckMs, watchDir, onAlive)),
    retry({
      // A failure that stays (the inotify limit reached) is retried each recheckMs as before, but told at its 1st,
      // 2nd, 4th, 8th … attempt: a line a second filled the log for as long. A watch that emits starts the count anew.
      resetOnSuccess: true,
      delay: (error: unknown, attempt: number) => {
        if ((attempt & (attempt - 1)) === 0)
          log.warn({ err: error, configDir: dir, attempt }, 'config watcher failed; re-establishing it');
        return timer(recheckMs);
      },
    }),
    repeat({
      delay: () => {
        rearms++;
        return timer(0);
      },
    }),
  );
  // Watching starts (not each re-arm): from here the watch has the stall threshold to arm and show progress.
  const started$ = defer(() => {
    onAlive();
    return watch$;
  });
  return {
    events$: merge(started$, lateReturn$),
    read: () => defer(read),
    status: () => ({ source: 'config-dir', ...(lastAliveAt !== undefined ? { lastAliveAt } : {}) }),
  };
};
