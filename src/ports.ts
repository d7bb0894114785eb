/**
 * The edges modelsync talks to, as small interfaces: the agent, the pipeline and the loader depend on these, the
 * capability folders implement them, tests too (real files and servers, in memory, or marbles). Effects that take
 * an AbortSignal must stop promptly when it aborts and leave nothing the next start would take for finished work.
 */
import type { Either } from 'fp-ts/Either';
import type { Observable } from 'rxjs';
import type { ConfigError } from './core/errors';
import type { FileSelection } from './core/file-selection';
import type { ModelSpec } from './core/model-config';
import type { ModelName } from './core/model-name';
import type { Snapshot } from './core/snapshot';

/**
 * A file-system event in the config dir: `rename` or `change` (fs.watch), a chokidar event name when polling, or
 * `ready` (a watch was (re)established); and the entry's name inside the dir (`''` for the dir itself).
 */
export interface FsEvent {
  readonly event: string;
  readonly name: string;
}

/** The text of models.json and the file it was read from. */
export interface ConfigText {
  readonly file: string;
  readonly text: string;
}

/** A read of models.json: its text, or why it could not be read. */
export type ConfigRead = Either<ConfigError, ConfigText>;

/** Where the config comes from. */
export interface ConfigSource {
  /** Events in the config dir for as long as subscribed; re-armed after errors and when the dir (re)appears. */
  readonly events$: Observable<FsEvent>;
  /** Reads models.json once, through the resolved `..data` target when there is one. Never errors. */
  readonly read: () => Observable<ConfigRead>;
}

/** How far a download has come: reported at a steady pace while it runs, and once when it ends (`done`). */
export interface DownloadProgress {
  readonly bytes: number;
  /** The bytes the whole download moves, when the storage said so up front. */
  readonly totalBytes?: number;
  readonly elapsedMs: number;
  /** Over the last interval; in the final report, over the whole download. */
  readonly bytesPerSecond: number;
  /** The time left at the current rate, when the total is known. */
  readonly etaSeconds?: number;
  readonly done: boolean;
}

/** What a download is asked beyond its URI: which files, and whether a copy already on disk can stand in. */
export interface DownloadRequest {
  /** Only the files these patterns select are fetched, decided from the listing before any byte is (absent: all). */
  readonly select?: FileSelection;
  /**
   * Offered the content's identity as soon as the provider knows it (the URI, the selection and the validators the
   * store gave: ETags, generations, a commit), before any byte of a file is fetched. It resolves true when it filled
   * the target dir itself from files of the same identity already on disk; the provider then fetches nothing more
   * and returns. A provider that cannot name a validator (no ETag, a local copy) never calls it.
   */
  readonly reuse?: (identity: string) => Promise<boolean>;
  /**
   * `reuse` is likely to fill (a node cache is on): a provider that learns the identity only from a body's answer
   * asks for the headers alone first (http: a HEAD), so that a hit moves no byte of the body.
   */
  readonly identifyFirst?: boolean;
}

/**
 * The regular files a download wrote into its target dir, by `/`-separated relative path, with their sizes: told
 * by a provider that knows them all (one file saved), so the commit need not list and stat the dir again.
 */
export type WrittenFiles = ReadonlyMap<string, number>;

/** Downloads models stored under some URI schemes. One implementation per scheme family, one file each. */
export interface StorageProvider {
  /** The schemes it serves, without the colon: `['http', 'https']`. Local paths are scheme `file`. */
  readonly schemes: ReadonlyArray<string>;
  /**
   * Fills `targetDir` (it exists and is empty) with the model stored at `uri`. Throws an EffectError:
   * retryable for transient faults, permanent otherwise. Must not hold a whole model in memory. Reports to
   * `progress`, if given, at its own pace (`trackProgress` in src/storage/transfer-progress.ts) and once at the end.
   * Resolves to the files it wrote when it knows them all (WrittenFiles), else to nothing: the commit lists the dir.
   */
  download(
    uri: string,
    targetDir: string,
    signal: AbortSignal,
    progress?: (progress: DownloadProgress) => void,
    request?: DownloadRequest,
  ): Promise<WrittenFiles | void>;
}

/** Fills a directory with the model stored at a URI, whatever its scheme (`routeStorage` over the providers). */
export type DownloadFunction = StorageProvider['download'];

/** A model's files in its staging dir, before the model server can see them (`ModelServer.vetFiles`). */
export interface ModelFiles {
  /** Every regular file, by `/`-separated path relative to the model's dir, with its size. */
  readonly sizes: ReadonlyMap<string, number>;
  /** The bytes of one of them, never through a link; rejects past `maxBytes`. */
  readonly read: (path: string, maxBytes: number) => Promise<Buffer>;
}

/** The model server's load/unload API (V2 repository extension, TorchServe management API, ...). */
export interface ModelServer {
  /** Loads (or reloads, when `replacing`) the model whose files are in `<model dir>/<name>`. Throws EffectError. */
  load(name: ModelName, replacing: boolean, signal: AbortSignal): Promise<void>;
  /** Unloads the model; a server that does not know it counts as done. Throws EffectError. */
  unload(name: ModelName, signal: AbortSignal): Promise<void>;
  /** Names of the models the server reports loaded (ready). Throws EffectError. */
  loadedModels(signal: AbortSignal): Promise<ReadonlySet<string>>;
  /**
   * Rejects with an EffectError when the server would take `files`, to be model `name`'s, for something else (MLServer
   * reads every model-settings.json of its repository: one naming another model serves these files as that one).
   * Asked before the files are opened to the server; absent: the server reads only what it is told to load.
   */
  vetFiles?(name: ModelName, files: ModelFiles, signal: AbortSignal): Promise<void>;
}

/** A model version installed in the model directory, and how to drop the version it replaced. */
export interface Installed {
  /** Deletes the files of the replaced version, if there was one (call after the new one is loaded). */
  readonly dropReplaced: () => Promise<void>;
}

/**
 * A model version being put together in a fresh staging dir beside `M/<name>`, until it is committed into place or
 * abandoned. Exactly one of `commit` and `abandon` is called, once.
 */
export interface Staged {
  /**
   * Where the model's files go. It may be a path through the dir's open handle (`/proc/self/fd/<n>`), so that a
   * neighbour who swaps the staging path for a link cannot redirect the writes.
   */
  readonly dir: string;
  /**
   * Runs `fill` (the download into `dir`) while the dir's mount is watched, as the store's own calls are: a write on a
   * mount that stops answering never returns, so once the mount is found hung this fails (retryable `timeout`, naming
   * the dir) and aborts the signal `fill` was given, instead of holding the model's download for good.
   */
  filling<T>(signal: AbortSignal, fill: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /**
   * Writes the marker (with the manifest of the files) last and renames the dir into place as `M/<name>`; the dir is
   * flushed in the background (in batches, once installs pause). A previous version is moved aside, not deleted,
   * until `dropReplaced` (which waits for that flush, started at once when there is a version to drop).
   * `beforeSwap` (the load journal's record, written meanwhile) must resolve before the rename; its rejection fails
   * the commit. `written`: what the download says it wrote (WrittenFiles), the manifest then taken from it rather
   * than from a listing of the dir. `vet` (the server's `vetFiles`) is shown the files before the marker is written;
   * its rejection fails the commit. On failure the staging dir is removed.
   */
  commit(
    beforeSwap?: Promise<unknown>,
    written?: WrittenFiles,
    vet?: (files: ModelFiles) => Promise<void>,
  ): Promise<Installed>;
  /**
   * Removes the staging dir after `cause` stopped its filling, and returns the error to report: `cause` naming the
   * staging dir rather than the handle path, or a retryable one when someone else removed or swapped the dir.
   */
  abandon(cause: unknown): Promise<unknown>;
}

/** What a fill from another model's dir put into a staging dir (`ModelStore.fillFrom`). */
export interface Filled {
  /** The regular files the source's marker lists, now in the staging dir. */
  readonly files: number;
  /** Bytes shared with the source through hard links (`--link-same-content`): no disk space used, nothing read. */
  readonly linkedBytes: number;
  /** Bytes cloned copy-on-write (btrfs, XFS with reflink): no disk space used until either file is written. */
  readonly clonedBytes: number;
  /** Bytes copied, where neither a link nor a clone was to be had (ext4, tmpfs, another file system). */
  readonly copiedBytes: number;
}

/** The bytes a fill brought, however each came (linked, cloned or copied). */
export const filledBytes = ({ linkedBytes, clonedBytes, copiedBytes }: Filled): number =>
  linkedBytes + clonedBytes + copiedBytes;

/** What the node cache gave for one identity (`NodeCache.take`). */
export type CacheTake =
  | { readonly _tag: 'Filled'; readonly filled: Filled }
  | {
      /** The identity is not cached and this process now downloads it: nobody else on the node does meanwhile. */
      readonly _tag: 'Claimed';
      /**
       * After the commit: puts the installed model into the cache, lets the others go on, then evicts what the
       * budget asks; resolves to the entries evicted. Never throws.
       */
      readonly publish: () => Promise<{ readonly evicted: number }>;
      /** The download failed: lets the others go on (one of them downloads it). */
      readonly release: () => Promise<void>;
    };

/** The node cache (`--node-cache-dir`): every modelsync on the node downloads each content once. */
export interface NodeCache {
  /**
   * Fills the still empty `staged` from the node's entry of `identity` (what a provider named after asking the store
   * with this process's own credentials, so only a process that may read the content finds its entry), waiting while
   * another process on the node downloads it; or claims the identity for this process to download.
   */
  take(identity: string, staged: Staged, signal: AbortSignal): Promise<CacheTake>;
}

/** The local model directory `M`: `M/<name>/` holds a model's files and its `SUCCESS.<sha256>` marker. */
export interface ModelStore {
  /** Creates `M` if missing, deletes temporary dirs and dirs without a valid marker, returns what is installed. */
  recover(): Promise<Snapshot>;
  /**
   * A fresh staging dir for `spec` of `name`, once the disk check passed and nothing that is not ours to replace
   * holds `M/<name>`. The caller fills it, then commits or abandons it.
   */
  stage(name: ModelName, spec: ModelSpec, signal: AbortSignal): Promise<Staged>;
  /** Deletes `M/<name>`; a missing dir counts as done. */
  remove(name: ModelName): Promise<void>;
  /**
   * True when `M/<name>` is still a real dir holding the marker of `spec`: the loader asks before loading files it
   * did not just install, since anyone sharing the volume may have replaced them (with a link, say) meanwhile.
   */
  isInstalled(name: ModelName, spec: ModelSpec): Promise<boolean>;
  /**
   * Fills the still empty `staged` with copies of the installed `M/<source>` (clones where the file system has
   * them; hard links only where the model server cannot write them) when its marker is of the same content (URI
   * and selection) and every file it lists is there at its size: one content is downloaded once, and a write to one
   * model's files changes no other. Undefined, `staged` left empty, when `source` is no such dir (gone, replaced, a
   * link in it): the caller downloads. Throws an EffectError when the file system fails (`no-space`: no room).
   */
  fillFrom(source: ModelName, staged: Staged, signal: AbortSignal): Promise<Filled | undefined>;
  /** The node cache, when there is one (`--node-cache-dir`). */
  readonly nodeCache?: NodeCache;
}

/**
 * The loads that were started and never confirmed. Until `confirmed`, a restart must load a model again even if
 * the server reports it loaded: the server may still hold the previous version (a crash between the swap and
 * the load, or a reload the server refused while it kept serving the old one).
 */
export interface LoadJournal {
  /** Durably notes that `name` is about to be loaded. */
  starting(name: ModelName): Promise<void>;
  /** The server confirmed the load of `name` (or the model is gone): nothing to redo. */
  confirmed(name: ModelName): Promise<void>;
  /** Models whose last load was started but never confirmed. */
  unconfirmed(): Promise<ReadonlySet<ModelName>>;
}

/** What the agent reports beyond statuses, for metrics and /status. Every method is cheap and never throws. */
export interface Telemetry {
  configRead(
    outcome: 'accepted' | 'rejected' | 'unchanged',
    detail?: { checksum?: string; reason?: string },
  ): void;
  resyncRun(trigger: 'timer' | 'signal'): void;
  repair(kind: 'reload-lost' | 'unload-unlisted' | 'retry-failed' | 'retry-unload'): void;
  retry(step: 'download' | 'load' | 'unload'): void;
  /** A start or a resync left `count` unloads of unlisted models to a later resync (`--max-unlisted-unloads`). */
  repairsDeferred?(count: number): void;
  /** The config source made progress (an event, a successful re-arm or poll). */
  watcherAlive(): void;
  /**
   * The node cache: a model filled from an entry (`Hit`, the bytes it did not download), one this pod downloads for
   * the node (`Miss`), entries this pod evicted after putting one in (`Evicted`).
   */
  nodeCache?(event: NodeCacheEvent): void;
}

/** What `Telemetry.nodeCache` hears. */
export type NodeCacheEvent =
  | { readonly _tag: 'Hit'; readonly bytes: number }
  | { readonly _tag: 'Miss' }
  | { readonly _tag: 'Evicted'; readonly entries: number };

const ignore = (): void => undefined;

/** Telemetry that records nothing: the default for tests and integrators. */
export const noTelemetry: Telemetry = {
  configRead: ignore,
  resyncRun: ignore,
  repair: ignore,
  retry: ignore,
  watcherAlive: ignore,
};
