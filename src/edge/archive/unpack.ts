/** unpack: the format-specific halves of extraction — a tar streamed through tar's Unpack, a zip file read by yauzl. */
import { createWriteStream } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract as untar, type ReadEntry, type Unpack } from 'tar';
import * as yauzl from 'yauzl';
import { EffectError, errorCode, errorMessage, permanentError } from '../../core/errors';
import { consume, fsError, isTransientFsError } from '../durable-fs';
import { refusal, type EntryGuard, type EntryKind } from './guard';

/** One extraction: where it writes, its guard, its signal, and how a refusal inside a callback stops it. */
export interface Job {
  readonly what: string;
  readonly root: string;
  readonly guard: EntryGuard;
  readonly signal: AbortSignal;
  readonly refuse: (error: EffectError) => void;
}

/** The failure of an archive whose bytes are all there: only a transient fs error may pass on a retry. */
export const archiveFailure =
  (what: string) =>
  (cause: unknown): unknown => {
    if (cause instanceof EffectError) return cause;
    if (isTransientFsError(cause)) return fsError(what, cause);
    return permanentError('invalid-archive', `${what}: invalid archive: ${errorMessage(cause)}`, cause);
  };

const tarKind = (entry: ReadEntry): EntryKind => {
  switch (entry.type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return 'file';
    case 'Directory':
    case 'GNUDumpDir':
      return 'dir';
    case 'SymbolicLink':
      return 'symlink';
    case 'Link':
      return 'hardlink';
    default:
      return 'other';
  }
};

/** Passes a plain tar through and gunzips a gzipped one: the magic bytes decide, not the Content-Type. */
async function* gunzipIfGzipped(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await iterator.next();
    if (next.done === true) break;
    head = Buffer.concat([head, next.value]);
  }
  async function* all(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  if (head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* all();
    return;
  }
  const gunzip = createGunzip();
  const feeding = pipeline(all(), gunzip);
  // A feeding failure destroys gunzip, so it also surfaces from the loop below; this only avoids an
  // unhandled rejection.
  feeding.catch(() => undefined);
  for await (const chunk of gunzip) yield chunk as Buffer;
  await feeding;
}

/**
 * tar's Unpack as a node Writable. Handed to pipeline directly, it is not seen to finish when its last
 * writes (symlinks) complete after end(); here end waits for 'finish', which tar emits once every entry is
 * on disk.
 */
const unpackSink = (unpack: Unpack): Writable => {
  const sink = new Writable({
    write: (chunk: Buffer, _encoding, callback) => {
      if (unpack.write(chunk)) callback();
      else unpack.once('drain', () => callback());
    },
    final: (callback) => {
      unpack.once('finish', () => callback());
      unpack.end();
    },
  });
  unpack.on('error', (error: Error) => sink.destroy(error));
  return sink;
};

export const untarInto = (
  source: AsyncIterable<Uint8Array>,
  { what, root, guard, signal, refuse }: Job,
): Promise<void> => {
  const unpack = untar({
    cwd: root,
    strict: true,
    // As root, tar would chown entries to the archive's uids.
    preserveOwner: false,
    dmode: 0o755,
    filter: (_path, entry) => {
      const readEntry = entry as ReadEntry;
      try {
        guard.check(readEntry.path, tarKind(readEntry), readEntry.linkpath ?? '');
      } catch (error) {
        refuse(error as EffectError);
        return false;
      }
      // Directories 0755; files keep their rwx bits but lose setuid/setgid/sticky and group/other write.
      readEntry.mode = tarKind(readEntry) === 'dir' ? 0o755 : (readEntry.mode ?? 0o644) & 0o755;
      return true;
    },
  });
  return consume(
    source,
    signal,
    (chunks) => pipeline(chunks, gunzipIfGzipped, unpackSink(unpack), { signal }),
    archiveFailure(what),
  );
};

const maxZipLinkBytes = 4096;
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

const readSmall = async (stream: AsyncIterable<unknown>, limit: number): Promise<Buffer | undefined> => {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length > limit) return undefined;
  }
  return Buffer.concat(chunks);
};

export const unzipInto = async (zipPath: string, job: Job): Promise<void> => {
  try {
    await unzipEntries(zipPath, job);
  } catch (cause) {
    throw archiveFailure(job.what)(cause);
  }
};

const unzipEntries = async (zipPath: string, { what, root, guard, signal }: Job): Promise<void> => {
  // Symlinks are made last, so no file of the archive can be written through one.
  const links: Array<{ at: string; target: string }> = [];
  // decodeStrings off: yauzl would reject a bad name with a bare "invalid relative path"; we decode the
  // same way it does and refuse with the message every archive gets.
  const zip = await yauzl
    .openPromise(zipPath, {
      lazyEntries: true,
      autoClose: true,
      decodeStrings: false,
      validateEntrySizes: true,
    })
    .catch((cause: unknown) => {
      // A file that cannot be opened is no fault of the archive's; one whose index is broken is.
      throw errorCode(cause) === undefined ? cause : fsError(`${what}: cannot open ${zipPath}`, cause);
    });
  try {
    for await (const entry of zip.eachEntry()) {
      if (signal.aborted) break;
      const name = yauzl.getFileNameLowLevel(
        entry.generalPurposeBitFlag,
        entry.fileNameRaw,
        entry.extraFields,
        false,
      );
      const problem = yauzl.validateFileName(name);
      const mode = entry.externalFileAttributes >>> 16;
      const kind = (mode & S_IFMT) === S_IFLNK ? 'symlink' : name.endsWith('/') ? 'dir' : 'file';
      // Our own check first: its message is the clearer; yauzl's catches whatever ours might miss.
      const at = kind === 'symlink' ? '' : guard.check(name, kind);
      if (problem !== null) throw refusal(what, name, problem);
      if (kind === 'symlink') {
        const target = await readSmall(await zip.openReadStreamPromise(entry), maxZipLinkBytes);
        if (target === undefined) throw refusal(what, name, 'its link target is too long');
        const text = target.toString('utf8');
        links.push({ at: guard.check(name, 'symlink', text), target: text });
      } else if (kind === 'dir') {
        await mkdir(path.join(root, at), { recursive: true, mode: 0o755 });
      } else {
        const to = path.join(root, at);
        await mkdir(path.dirname(to), { recursive: true, mode: 0o755 });
        const content = await zip.openReadStreamPromise(entry);
        // wx: a duplicate entry fails instead of silently replacing the first.
        await pipeline(content, createWriteStream(to, { flags: 'wx' }), { signal });
      }
    }
  } finally {
    zip.close();
  }
  signal.throwIfAborted();
  for (const { at, target } of links) {
    const to = path.join(root, at);
    await mkdir(path.dirname(to), { recursive: true, mode: 0o755 });
    await symlink(target, to);
  }
};
