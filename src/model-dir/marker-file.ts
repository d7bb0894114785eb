/** marker-file: the SUCCESS marker of a model dir on disk — written last into a staged dir, read back at recovery, never through a link. */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { isLeft } from 'fp-ts/Either';
import { errorCode, errorMessage } from '../core/errors';
import { decodeMarker, markerJson, markerPrefix, specIdentityJson, type FileManifest } from '../core/marker';
import type { ModelSpec } from '../core/model-config';
import { isTransientFsError, quick, readSmallFileWithStats, step, type OpenDir } from '../fs';
// Ours lists every file with its size: a model of 10,000 files (`--max-model-files`, `--max-archive-entries`) with
// 1 KiB keys writes ~10 MiB. At 64 KiB, one of ~1,000 files was read back as corrupt and deleted at every restart.
const maxMarkerBytes = 16 * 1024 * 1024;
// Of a dir with several markers, the ones named (a neighbour may plant millions beside ours); the rest are counted.
const markersNamed = 10;
// O_EXCL already refuses any existing entry, a dangling link included; O_NOFOLLOW says so once more.
const createNew = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
// Readable by modelsync's user alone: see writeMarker.
const markerMode = 0o600;

const markerName = (spec: ModelSpec): string =>
  markerPrefix + createHash('sha256').update(specIdentityJson(spec)).digest('hex');

/** True for a top-level entry name that a reader of the dir would take for a marker (ours or KServe's). */
export const isMarkerName = (name: string): boolean => name.startsWith(markerPrefix);

/**
 * Writes the marker of `spec`, with the manifest of the files beside it, into the held dir `dir`; it must not exist
 * yet; returns its name. Not flushed here: the install flushes what it wrote once it is in place (see stage.ts).
 * Readable by its owner alone (KServe's agent writes 0644): its storage URI may carry a SAS or a presigned
 * signature, and the model server, which shares the dir as another user and runs the model's code, has no use for it.
 */
export const writeMarker = async (dir: OpenDir, spec: ModelSpec, files: FileManifest): Promise<string> => {
  const name = markerName(spec);
  const withManifest = markerJson(spec, files);
  // A marker past what recovery reads would be taken for a corrupt one at the next start, and its model deleted and
  // fetched again at every start: a manifest that alone is past it (100,000 files of long paths: a local or pvc://
  // model has no file cap) is left out, as KServe's markers have none (its files are then not checked at recovery).
  const text = Buffer.byteLength(withManifest) <= maxMarkerBytes ? withManifest : markerJson(spec);
  await step(`cannot write the marker ${join(dir.path, name)}`, () =>
    quick.writeFile(`${dir.ref}/${name}`, text, { flag: createNew, mode: markerMode }),
  );
  return name;
};

const openToChmod = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Makes the marker at `path` readable by its owner alone, as writeMarker writes it, when others may read it (a
 * marker of KServe's agent, or of an older modelsync, which wrote 0644, left by an upgrade over the same model
 * dir); never through a link, and only a regular file. True when its mode was changed.
 */
export const keepMarkerPrivate = async (path: string): Promise<boolean> => {
  const file = await open(path, openToChmod);
  try {
    const info = await file.stat();
    if (!info.isFile() || (info.mode & 0o077) === 0) return false;
    await file.chmod(markerMode);
    return true;
  } finally {
    await file.close();
  }
};

/** A model dir as found on disk. */
export type DirState =
  | {
      readonly _tag: 'Valid';
      readonly file: string;
      readonly spec: ModelSpec;
      /** The files the marker says must be there (absent in a KServe or pre-0.3 marker). */
      readonly files?: FileManifest;
      /** Its mode lets others than its owner read it (KServe's agent and modelsync before e7aa873 wrote 0644). */
      readonly othersMayRead: boolean;
    }
  | { readonly _tag: 'NoMarker' }
  | {
      readonly _tag: 'Ambiguous';
      /** The paths of a few of them (`markersNamed`), sorted. */
      readonly files: ReadonlyArray<string>;
      readonly count: number;
    }
  | { readonly _tag: 'Corrupt'; readonly file: string; readonly reason: string }
  /** A marker this process may not open (EACCES, EPERM): another uid's, as likely as not; nothing said of it. */
  | { readonly _tag: 'Unreadable'; readonly file: string; readonly reason: string };

/** The errno of a file this process may not open (its owner's alone, another uid's). */
const notPermitted = (cause: unknown): boolean => ['EACCES', 'EPERM'].includes(errorCode(cause) ?? '');

const readMarker = async (ref: string, file: string): Promise<DirState> => {
  try {
    const read = await readSmallFileWithStats(ref, maxMarkerBytes, `the marker ${file}`, 'refuse');
    const content = decodeMarker(read.bytes.toString('utf8'));
    return isLeft(content)
      ? { _tag: 'Corrupt', file, reason: content.left }
      : { _tag: 'Valid', file, ...content.right, othersMayRead: (read.stats.mode & 0o077) !== 0 };
  } catch (cause) {
    // A read that may pass (out of descriptors, an I/O error) says nothing of the marker: read as corrupt, a complete
    // model was deleted (and downloaded again). Thrown, the model dir is left as it is: see `inspect`'s callers.
    if (isTransientFsError(cause)) throw cause;
    // Told by the marker's path, not the handle path (`ref`) it was opened through.
    const reason = errorMessage(cause).split(ref).join(file);
    // Nor does a marker not ours to read (another uid's, 0600): read as corrupt, recovery moved its dir aside from
    // under the model server that served it (and failed to delete it).
    return notPermitted(cause) ? { _tag: 'Unreadable', file, reason } : { _tag: 'Corrupt', file, reason };
  }
};

/**
 * What the markers directly inside the held dir `dir` say; throws the fs error when it cannot be listed. A link or
 * FIFO named like a marker is none, nor is a nested one (KServe took those for the nested dir's). The dir is read as
 * a stream, keeping a few marker names: whatever else the model server put there (millions of files) costs no memory.
 */
export const readDirState = async (dir: OpenDir): Promise<DirState> => {
  const markers: string[] = [];
  let count = 0;
  for await (const entry of await opendir(dir.ref)) {
    if (!entry.isFile() || !isMarkerName(entry.name)) continue;
    count++;
    if (markers.length < markersNamed) markers.push(entry.name);
  }
  if (count === 0) return { _tag: 'NoMarker' };
  if (count > 1)
    return { _tag: 'Ambiguous', files: markers.sort().map((name) => join(dir.path, name)), count };
  return readMarker(`${dir.ref}/${markers[0]!}`, join(dir.path, markers[0]!));
};
