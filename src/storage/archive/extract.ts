/** extract: tar (gzipped or not) and zip archives unpacked into a dir, from a stream or a file, every entry guarded. */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { retryableError, type EffectError } from '../../core/errors';
import { selectsAll, type FileSelection } from '../../core/file-selection';
import { fsError, step, writeNewFile } from '../../fs';
import { defaultDownloadLimits } from '../download-limits';
import { ArchiveBudget, type ArchiveLimits } from './budget';
import { EntrySelection } from './entry-selection';
import { checkLinksInside, EntryGuard } from './guard';
import type { Job } from './unpack';
import { untarInto } from './untar';
import { unzipInto } from './unzip';

/** The archive formats: `tar` covers gzipped tars too (the magic bytes decide, not the name). */
export type ArchiveFormat = 'tar' | 'zip';

/**
 * The format a file name announces (`.tar`, `.tar.gz`, `.tgz`, `.zip`, any case), or undefined for any other. A tar
 * compressed otherwise (`.tar.bz2`, `.tbz2`, `.tar.xz`, `.txz`, which KServe's initializer extracts) is a `tar` too:
 * extracting it fails for good naming its compression, where saving it as a file handed the model server an archive.
 */
export const archiveFormatOf = (fileName: string): ArchiveFormat | undefined =>
  /\.zip$/i.test(fileName)
    ? 'zip'
    : /\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$/i.test(fileName)
      ? 'tar'
      : undefined;

/** What an extraction is called in messages and what stops it. */
export interface ExtractOptions {
  /** Names the archive in messages: `GET https://host/m.tar.gz`, `extracting /data/m.zip`. */
  readonly what: string;
  /** Aborting stops the extraction promptly; it then rejects with an `aborted` EffectError. */
  readonly signal: AbortSignal;
  /** The caps on entries, expanded bytes and expansion ratio (default: the flags' defaults). */
  readonly limits?: ArchiveLimits;
  /** Only the entries whose paths these patterns take are written (absent: all); see EntrySelection. */
  readonly select?: FileSelection;
}

/**
 * Extracts the archive read from `source` into the existing dir `targetDir`: a tar streamed, a zip (its index is at
 * its end) first saved inside `targetDir`. Fails with an EffectError: `refused` for an entry or link leading outside
 * `targetDir` (or a device, FIFO, ...); `too-large` past a cap of `limits` (declared sizes, before writing);
 * `invalid-archive`, permanent for a corrupt one (duplicates, dangling hard links) and retryable for one cut short
 * (a tar without its end blocks, a gzip without its trailer, a zip without its central directory); `filesystem`,
 * `aborted`; `not-found` when `select` took none of its files. An error of `source` passes unchanged.
 */
export const extractStream = (
  source: AsyncIterable<Uint8Array>,
  format: ArchiveFormat,
  targetDir: string,
  options: ExtractOptions,
): Promise<void> =>
  extraction(targetDir, options, async (job) => {
    if (format === 'tar') return untarInto(source, job);
    // In the target dir, which the model store deletes whole if we crash; no entry can take the random name.
    const zipPath = path.join(job.root, `.modelsync-${randomBytes(8).toString('hex')}.zip`);
    try {
      await writeNewFile(source, zipPath, job.signal, `${options.what}: cannot save the zip`);
      await unzipInto(zipPath, job);
    } finally {
      await rm(zipPath, { force: true });
    }
  });

/** The bytes of `file`, opened once read: a stream failing (ENOENT) before its reader listens ends the process. */
async function* readWhenIterated(file: string): AsyncGenerator<Uint8Array> {
  yield* createReadStream(file);
}

/** extractStream for the archive file `file`; failing to read it is a `filesystem` EffectError. */
export const extractFile = async (
  file: string,
  format: ArchiveFormat,
  targetDir: string,
  options: ExtractOptions,
): Promise<void> => {
  try {
    if (format === 'tar') await extractStream(readWhenIterated(file), 'tar', targetDir, options);
    else await extraction(targetDir, options, (job) => unzipInto(file, job));
  } catch (cause) {
    throw fsError(`${options.what}: cannot read ${file}`, cause);
  }
};

/**
 * Runs one extraction into `targetDir`, then walks every symlink it made. A refusal inside tar's callbacks stops it
 * through `job.refuse` and is the outcome, whatever the stop then causes; after the caller's abort, `aborted`.
 */
const extraction = async (
  targetDir: string,
  { what, signal, limits, select }: ExtractOptions,
  run: (job: Job) => Promise<void>,
): Promise<void> => {
  const aborted = (): EffectError => retryableError('aborted', `${what} aborted`, signal.reason);
  if (signal.aborted) throw aborted();
  const stop = new AbortController();
  let refused: EffectError | undefined;
  const refuse = (error: EffectError): void => {
    refused ??= error;
    stop.abort(error);
  };
  try {
    await step(`${what}: cannot use ${targetDir}`, async () => {
      if (!(await stat(targetDir)).isDirectory())
        throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    });
    const selection = selectsAll(select) ? undefined : new EntrySelection(what, select!);
    const job = {
      what,
      // Not resolved: the store hands us its staging dir by handle, so a dir swapped for a link cannot redirect us.
      root: targetDir,
      guard: new EntryGuard(what),
      budget: new ArchiveBudget(what, limits ?? defaultDownloadLimits),
      ...(selection !== undefined ? { selection } : {}),
      signal: AbortSignal.any([signal, stop.signal]),
      refuse,
    };
    await run(job);
    signal.throwIfAborted();
    selection?.checkSomeTaken();
    await checkLinksInside(targetDir, what).catch((cause: unknown) => {
      throw fsError(`${what}: cannot check the links of ${targetDir}`, cause);
    });
  } catch (cause) {
    if (refused !== undefined) throw refused;
    if (signal.aborted) throw aborted();
    throw cause;
  }
};
