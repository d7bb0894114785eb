/** A staging dir: made fresh beside the model dir, held open, filled through its handle (by the caller), marked last. */
import type { Dirent } from 'node:fs';
import { readdir, rmdir } from 'node:fs/promises';
import { EffectError, errorCode, retryableError } from '../core/errors';
import type { ModelSpec } from '../core/model-config';
import type { ModelName } from '../core/model-name';
import { join } from 'node:path';
import {
  fsError,
  step,
  fileSizes,
  openListedDir,
  quick,
  readSmallFile,
  removeTree,
  type OpenDir,
} from '../fs';
import type { Logger } from '../log';
import type { ModelFiles, WrittenFiles } from '../ports';
import { isMarkerName, writeMarker } from './marker-file';
// The model server usually runs as another user; mkdtemp creates 0700.
const modelDirMode = 0o755;
// What opening a staging dir meets when someone deleted it or put a link or a file in its place.
const takenAwayCodes = new Set(['ENOENT', 'ELOOP', 'ENOTDIR']);

/** The failure of an install whose staging dir someone else deleted or swapped: a fresh one may well succeed. */
export const stagingTakenAway = (staging: string, cause?: unknown): EffectError =>
  retryableError(
    'filesystem',
    `the staging dir ${staging} was removed or replaced by someone else during the install; retrying with a fresh one`,
    cause,
  );

/**
 * The staging dir mkdtemp made at `ref` (shown as `path`), held open: it must still be the empty 0700 dir it made,
 * or someone swapped it in between.
 */
export const openFreshStagingDir = async (ref: string, path = ref): Promise<OpenDir> => {
  const opened = await openListedDir(ref).catch((cause: unknown) => {
    // Gone, or a link or a file in its place: someone else's doing. Any other code (EMFILE: out of descriptors) is
    // the open's own failure, said as it is.
    if (!takenAwayCodes.has(errorCode(cause) ?? ''))
      throw fsError(`cannot open the staging dir ${path}`, cause);
    throw stagingTakenAway(path, cause);
  });
  const dir = { ...opened, path };
  if ((dir.stats.mode & 0o777) !== 0o700 || opened.entries.length > 0) {
    await dir.handle.close();
    throw stagingTakenAway(path);
  }
  return dir;
};

/** A fresh staging dir `<prefix>XXXXXX`, held open (`openFreshStagingDir`); removed again when it cannot be. */
export const createStagingDir = async (prefix: string): Promise<OpenDir> => {
  const made = await step(`cannot create a staging dir ${prefix}*`, () => quick.mkdtemp(prefix));
  try {
    return await openFreshStagingDir(made);
  } catch (cause) {
    // Left, it stayed until the next start's recovery: one more for each retry while the fault lasts. rmdir first: it
    // needs no descriptor (the open may have failed for want of one) and follows no link; whatever else holds the
    // name now is removed unfollowed; a removal that fails too is left to that recovery.
    await rmdir(made)
      .catch(() => removeTree(made))
      .catch(() => undefined);
    throw cause;
  }
};

/**
 * Drops top-level entries named like a marker that the model brought (two markers would make the dir ambiguous);
 * returns the other top-level entries.
 */
const dropBroughtMarkers = async (dir: OpenDir, name: ModelName, log: Logger): Promise<Dirent[]> => {
  const entries = await step(`cannot list ${dir.path}`, () => readdir(dir.ref, { withFileTypes: true }));
  const brought = entries.filter((entry) => isMarkerName(entry.name)).map((entry) => entry.name);
  if (brought.length === 0) return entries;
  log.warn(
    { model: name, entries: brought.sort() },
    'the model brings files named like our marker; dropping them',
  );
  for (const entry of brought) await removeTree(`${dir.ref}/${entry}`);
  return entries.filter((entry) => !isMarkerName(entry.name));
};

export interface StagingMark {
  readonly name: ModelName;
  readonly spec: ModelSpec;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** What the download says it wrote (top-level files only: no listing needed); absent: the dir is listed. */
  readonly written?: WrittenFiles | undefined;
  /** Shown the files before the marker is written (`Staged.commit`); its rejection fails the mark. */
  readonly vet?: ((files: ModelFiles) => Promise<void>) | undefined;
}

/** True when `written` can stand for the dir's listing: top-level files, none named like a marker (to be dropped). */
const takesTheListing = (written: WrittenFiles | undefined): written is WrittenFiles =>
  written !== undefined &&
  written.size > 0 &&
  [...written.keys()].every((file) => !file.includes('/') && !isMarkerName(file));

/**
 * Marks a filled staging dir (see `Staged.commit`): drops marker look-alikes, writes the marker last and opens the
 * dir to the model server; nothing is flushed here. Returns what the install wrote (the manifest's files and the
 * marker), the paths the flush covers. The files a download says it wrote are the manifest as they are:
 * it wrote each with O_EXCL into this dir, held open, which only we can enter (0700): a listing would say the same.
 */
export const markStagingDir = async (
  dir: OpenDir,
  { name, spec, signal, log, written, vet }: StagingMark,
): Promise<ReadonlyArray<string>> => {
  signal.throwIfAborted();
  const files = takesTheListing(written)
    ? written
    : await fileSizes(dir, await dropBroughtMarkers(dir, name, log));
  signal.throwIfAborted();
  // The dir is 0700 and held open: what is read here is what the rename opens to the server.
  await vet?.({
    sizes: files,
    read: (path, maxBytes) => readSmallFile(`${dir.ref}/${path}`, maxBytes, join(dir.path, path), 'refuse'),
  });
  signal.throwIfAborted();
  // Both before the swap, neither needs the other: one wait, not two.
  const [marker] = await Promise.all([
    writeMarker(dir, spec, files),
    step(`cannot chmod ${dir.path}`, () => dir.handle.chmod(modelDirMode)),
  ]);
  return [...files.keys(), marker];
};
