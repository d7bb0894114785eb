/**
 * downloadObjects, the one download engine: every object a bucket prefix (or file a Hub commit) names, into a
 * model's staging dir; objectStoreStorage, the StorageProvider over it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { open, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import * as E from 'fp-ts/Either';
import { permanentError, retryableError, toEffectError, type EffectError } from '../../core/errors';
import { selectionKey, type FileSelection } from '../../core/file-selection';
import { inSlot, type Slots } from '../../core/slots';
import type { DownloadProgress, DownloadRequest, StorageProvider } from '../../ports';
import { fetchInParts, trustedCause, UntrustedBytes } from '../parts/fetch-parts';
import { rangedThresholdBytes } from '../parts/part-plan';
import { archiveFormatOf, extractFile } from '../archive/extract';
import { defaultDownloadLimits, type DownloadLimits } from '../download-limits';
import { consume, forEachLimited, fsError, inRealDirs, makeDirs, step } from '../../fs';
import { ContentCheck } from '../listed-content';
import { modelGuard, type TransferGuard } from '../transfer-guard';
import { trackProgress } from '../transfer-progress';
import type { ObjectLocation, ObjectStoreClient, StoredObject } from './client';
import { loneArchive, planObjects, type PlannedObject } from './plan-objects';
import { storePressures, type StorePressure } from '../store-pressure';
import type { RetryPolicy } from '../../core/retry-policy';

/** How one model's objects are fetched. */
export interface ObjectDownloadOptions {
  /** Objects in flight at once (`--storage-concurrency`; default 8). */
  readonly concurrency?: number;
  /** The model cap, the archive caps and the minimum rate (default: the flags' defaults). */
  readonly limits?: DownloadLimits;
  /** Resumes of one object in a row that bring no new bytes before its cut fails the attempt (default 3). */
  readonly maxResumes?: number;
  /** Connections one big object is fetched over, as ranged parts (`--download-streams`; default 8, 1: one). */
  readonly streams?: number;
  /** The process-wide bound on storage connections (`--max-download-streams`): each object in flight holds one. */
  readonly pool?: Slots;
  /** The store's push-back state: every read asks through it (objectStoreStorage keeps one per bucket). */
  readonly pressure?: StorePressure;
  /** The waits and tries after a push-back, for objectStoreStorage's (the flags' retry policy). */
  readonly retry?: RetryPolicy;
}

const defaultObjectDownloadOptions: Required<Omit<ObjectDownloadOptions, 'pool' | 'pressure' | 'retry'>> = {
  concurrency: 8,
  limits: defaultDownloadLimits,
  maxResumes: 3,
  streams: 8,
};

// The transient failures a ranged read can pick up from: the connection, the server, a stall. Not `changed` (the
// listing is stale: the loader's retry lists again) and not what the attempt itself stopped for.
const resumableKinds = new Set<string>(['network', 'timeout', 'http-status', 'invalid-response']);
const resumable = (cause: unknown): boolean => {
  const error = toEffectError(cause);
  return error.retryable && resumableKinds.has(error.kind);
};

/** One model's download: its settings, where, what stops it, and the guard every byte passes. */
type Job = typeof defaultObjectDownloadOptions &
  ObjectDownloadOptions & {
    readonly client: ObjectStoreClient;
    readonly location: ObjectLocation;
    readonly what: string;
    readonly signal: AbortSignal;
    readonly guard: TransferGuard;
  };

/**
 * Reads `object` from `check.bytes` on into the file `to.file()` opens (created at the first answer, so a refused read
 * leaves nothing behind), every byte counted on the guard and passed through `check` (cut at the listed size, hashed
 * when the listing gives a digest).
 */
const readInto = async (
  job: Job,
  object: StoredObject,
  to: { readonly path: string; readonly file: () => Promise<FileHandle> },
  check: ContentCheck,
) => {
  let at = check.bytes;
  // The file first: a body is read from the moment it is handed out, so that no byte before a cut is lost.
  const file = await to.file();
  const read = () => job.client.read(job.location, object, at, job.signal);
  const body = await (job.pressure?.askThroughPushbacks(job.signal, read) ?? read());
  await consume(
    job.guard.count(check.pass(body)),
    job.signal,
    async (chunks) => {
      for await (const chunk of chunks) {
        await file.write(chunk, 0, chunk.byteLength, at);
        at += chunk.byteLength;
      }
    },
    (cause) => fsError(`${job.what}: cannot write ${to.path}`, cause),
  );
  check.verify();
};

/**
 * Saves `object` as the new file `to`, held to its listed size and digest (ContentCheck); a cut read resumes from the
 * bytes written, as docs/storage.md says ("Resume within an attempt"). A big object goes in ranged parts
 * (fetchInParts), its digest read back.
 */
const fetchObject = async (job: Job, object: StoredObject, to: string): Promise<void> => {
  const what = `${job.what}: ${object.key}`;
  const check = new ContentCheck(what, object.size, object.digest, job.client.repo !== undefined);
  // A read is pinned to the listed bytes by the version (If-Match, the generation) or by the repo's commit; an
  // object listed without one is read whole, never in ranges nor resumed: another upload could be spliced in.
  const pinned = job.client.repo !== undefined || object.version !== '';
  if (pinned && job.streams > 1 && object.size >= rangedThresholdBytes) {
    await fetchInParts(
      {
        what,
        size: object.size,
        to,
        read: (start, end, signal) => job.client.read(job.location, object, start, signal, end),
        signal: job.signal,
        guard: job.guard,
        resumable,
      },
      { streams: job.streams, pool: job.pool, maxResumes: job.maxResumes, pressure: job.pressure },
    );
    await check.verifyFile(to, job.signal);
    return;
  }
  let opened: Promise<FileHandle> | undefined;
  const file = () => (opened ??= step(`${job.what}: cannot create ${to}`, () => open(to, 'wx')));
  try {
    for (let idle = 0; ;) {
      const before = check.bytes;
      try {
        await readInto(job, object, { path: to, file }, check);
        return;
      } catch (cause) {
        // An unframed answer's bytes may not be data: not resumed, the attempt fails and starts again whole.
        const resumes =
          !(cause instanceof UntrustedBytes) &&
          check.failed === undefined &&
          check.bytes > 0 &&
          pinned &&
          resumable(cause) &&
          !job.signal.aborted;
        idle = check.bytes > before ? 0 : idle + 1;
        if (!resumes || idle > job.maxResumes) throw toEffectError(trustedCause(cause));
      }
    }
  } finally {
    await opened?.then((handle) => handle.close()).catch(() => undefined);
  }
};

/**
 * The identity of a model's objects for `request.reuse`: the store, the bucket and prefix with every planned
 * object's path, size and version (ETag or generation), and the selection; the same identity is the same bytes.
 */
const identityOf = (
  store: string | undefined,
  location: ObjectLocation,
  plan: ReadonlyArray<PlannedObject>,
  select: FileSelection | undefined,
): string => {
  const objects = plan.map((item) => `${item.path}\u0000${item.object.size}\u0000${item.object.version}`);
  const digest = createHash('sha256').update(objects.join('\u0001')).digest('hex');
  const at = store === undefined ? '' : ` at ${store}`;
  return `objects ${location.display}${at} ${location.bucket} ${location.prefix} ${digest} ${selectionKey(select)}`;
};

/** Saves the one archive object to a scratch file beside the model's files, extracts it, deletes it. */
const fetchArchive = async (job: Job, item: PlannedObject, targetDir: string, limits: DownloadLimits) => {
  const format = archiveFormatOf(item.path)!;
  // A file of the staging dir: if we crash, the store deletes it with the dir. The random name is no entry's, and
  // short: the object's own name may take all 255 bytes a file name has.
  const scratch = path.join(targetDir, `.modelsync-${randomBytes(8).toString('hex')}.${format}`);
  try {
    await fetchObject(job, item.object, scratch);
    await extractFile(scratch, format, targetDir, {
      what: `${job.what}: ${item.object.key}`,
      signal: job.signal,
      limits,
      select: item.select,
    });
  } finally {
    await rm(scratch, { force: true });
  }
};

/**
 * Downloads the objects `location` names (see planObjects) into the existing, empty dir `targetDir`, as
 * docs/storage.md says ("Object stores"): at most `concurrency` at a time, every byte through one TransferGuard, a
 * lone archive extracted, the first failure stopping the others. Fails with the client's EffectErrors, the
 * planner's, `too-large`, `timeout` (too slow), `filesystem` and `aborted`.
 */
export const downloadObjects = async (
  client: ObjectStoreClient,
  location: ObjectLocation,
  targetDir: string,
  signal: AbortSignal,
  options: ObjectDownloadOptions = {},
  progress?: (progress: DownloadProgress) => void,
  request?: DownloadRequest,
): Promise<void> => {
  const settings = { ...defaultObjectDownloadOptions, ...options };
  const { concurrency, limits } = settings;
  const what = `downloading ${location.display}`;
  // One signal for every object of the model, which the first failure or a rate below the minimum stops.
  const stopper = new AbortController();
  let stoppedBy: EffectError | undefined;
  const stop = (error: EffectError): void => {
    stoppedBy ??= error;
    stopper.abort(error);
  };
  const guard = modelGuard(what, targetDir, limits, stop);
  const job: Job = {
    ...settings,
    client,
    location,
    what,
    signal: AbortSignal.any([signal, stopper.signal]),
    guard,
  };
  // Each object in flight adds a few abort listeners: more than Node's warning level of 10.
  setMaxListeners(8 + 4 * concurrency, job.signal);
  let tracker: { readonly stop: () => void } | undefined;
  try {
    const plan = await planObjects(client, location, job.signal, limits, request?.select, job.pressure);
    const reuse = request?.reuse;
    const identity = () =>
      client.repo?.identity(request?.select) ?? identityOf(client.store, location, plan, request?.select);
    // An object listed without a version (a store that lists no ETag) leaves only its path and size: no identity.
    const versioned = client.repo !== undefined || plan.every((item) => item.object.version !== '');
    if (reuse !== undefined && versioned && (await reuse(identity()))) return;
    const totalBytes = plan.reduce((sum, item) => sum + item.object.size, 0);
    await guard.admit(totalBytes);
    tracker = trackProgress({
      bytes: () => guard.total,
      totalBytes: () => totalBytes,
      everyMs: limits.progressIntervalMs,
      report: progress,
    });
    await step(`${what}: cannot create ${targetDir}`, () => makeDirs(targetDir));
    const archive = loneArchive(client, plan);
    if (archive !== undefined) {
      await fetchArchive(job, archive, targetDir, limits);
      return;
    }
    await forEachLimited(plan, concurrency, async (item) => {
      try {
        // Its dirs entered by handle: the model server sharing the volume may swap one for a link meanwhile.
        const fetch = () =>
          step(`${what}: cannot create ${path.join(targetDir, item.path)}`, () =>
            inRealDirs(targetDir, item.path, (to) => fetchObject(job, item.object, to)),
          );
        await inSlot(job.pool, job.signal, fetch);
      } catch (cause) {
        stop(toEffectError(cause));
        throw cause;
      }
    });
  } catch (cause) {
    if (signal.aborted) throw retryableError('aborted', `${what}: aborted`, signal.reason);
    throw stoppedBy ?? toEffectError(cause);
  } finally {
    tracker?.stop();
  }
};

/** Where a URI points in some store, and the client that reads there. */
export interface ResolvedLocation {
  readonly client: ObjectStoreClient;
  readonly location: ObjectLocation;
  /** Which store's pressure its requests go through, when the bucket does not say (an Azure account's container). */
  readonly store?: string;
}

/** What makes an object-store StorageProvider. */
export interface ObjectStoreStorageOptions extends ObjectDownloadOptions {
  /** The schemes it serves, without the colon (`['s3']`). */
  readonly schemes: ReadonlyArray<string>;
  /** The location `uri` names and its client; the Left says why it names none (never quoting a secret). */
  readonly resolve: (uri: string) => E.Either<string, ResolvedLocation>;
}

/**
 * A StorageProvider over an object store: `resolve` finds the bucket and prefix, downloadObjects does the rest.
 * A URI `resolve` refuses is a permanent `invalid-uri`.
 */
export const objectStoreStorage = (options: ObjectStoreStorageOptions): StorageProvider => {
  const pressures = storePressures(options.retry);
  return {
    schemes: options.schemes,
    download: async (uri, targetDir, signal, progress, request) => {
      const resolved = options.resolve(uri);
      if (E.isLeft(resolved)) throw permanentError('invalid-uri', resolved.left);
      const { client, location, store } = resolved.right;
      const pressure = pressures(store ?? location.bucket);
      await downloadObjects(client, location, targetDir, signal, { ...options, pressure }, progress, request);
    },
  };
};
