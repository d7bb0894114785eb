/** unzip: a zip file read by yauzl — its end required, its central directory counted, every entry guarded. */
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as Yauzl from 'yauzl';
import { errorCode } from '../../core/errors';
import { lazyModule } from '../../core/lazy-module';
import { fsError, inRealDirs, makeDirs, step } from '../../fs';
import { quotedName, refusal, type EntryKind } from './guard';
import {
  archiveFailure,
  invalidArchive,
  makeLinks,
  truncatedArchive,
  type ArchiveLink,
  type Job,
} from './unpack';

/* eslint-disable @typescript-eslint/no-require-imports -- loaded at the first zip (lazy-module.ts) */
const yauzlModule = lazyModule(() => require('yauzl') as typeof Yauzl);
const zlib = lazyModule(() => require('node:zlib') as typeof import('node:zlib'));
/* eslint-enable @typescript-eslint/no-require-imports */

const maxZipLinkBytes = 4096;
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
// Hosts whose zips carry a Unix st_mode in the high half of the external attributes: Unix and macOS.
const unixHosts = new Set([3, 19]);

/** What a zip entry is, from its Unix mode when it has one: FIFOs, devices and sockets are `other`. */
const zipKind = (entry: Yauzl.Entry, name: string): EntryKind => {
  const type = unixHosts.has(entry.versionMadeBy >> 8) ? (entry.externalFileAttributes >>> 16) & S_IFMT : 0;
  if (type === S_IFLNK) return 'symlink';
  if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) return 'other';
  return name.endsWith('/') ? 'dir' : 'file';
};
// The end of central directory record: its signature, its size without the comment, the longest comment.
const endSignature = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
const endRecordBytes = 22;
const maxCommentBytes = 0xffff;
const localHeaderSignature = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

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

/** An entry's bytes, failing at their end unless they match the CRC-32 its directory records (yauzl checks sizes). */
const crcChecked = (expected: number, what: string, name: string): Transform => {
  const { crc32 } = zlib();
  let crc = 0;
  return new Transform({
    transform: (chunk: Buffer, _encoding, done) => {
      crc = crc32(chunk, crc);
      done(null, chunk);
    },
    flush: (done) =>
      done(
        crc === expected ? null : invalidArchive(what, `entry ${quotedName(name)} fails its CRC-32 check`),
      ),
  });
};

/** The size of the zip file; one that begins like a zip (or is empty) without an end record was cut short. */
const sizeOfWholeZip = (zipPath: string, what: string): Promise<number> =>
  step(`${what}: cannot read ${zipPath}`, async () => {
    const handle = await open(zipPath, 'r');
    try {
      const { size } = await handle.stat();
      const tailBytes = Math.min(size, endRecordBytes + maxCommentBytes);
      const tail = Buffer.alloc(tailBytes);
      await handle.read(tail, 0, tailBytes, size - tailBytes);
      const end = tail.lastIndexOf(endSignature);
      if (end >= 0 && end + endRecordBytes <= tail.length) return size;
      const head = Buffer.alloc(Math.min(size, localHeaderSignature.length));
      await handle.read(head, 0, head.length, 0);
      if (localHeaderSignature.subarray(0, head.length).equals(head)) {
        throw truncatedArchive(what, 'the zip ended before its central directory');
      }
      return size;
    } finally {
      await handle.close();
    }
  });

/** Extracts the zip file `zipPath` into `job.root`, its entries counted by its central directory, then one by one. */
export const unzipInto = async (zipPath: string, job: Job): Promise<void> => {
  try {
    await unzipEntries(zipPath, await sizeOfWholeZip(zipPath, job.what), job);
  } catch (cause) {
    throw archiveFailure(job.what)(cause);
  }
};

const unzipEntries = async (
  zipPath: string,
  zipBytes: number,
  { what, root, guard, budget, selection, signal }: Job,
): Promise<void> => {
  // Symlinks are made last, so no file of the archive can be written through one.
  const links: ArchiveLink[] = [];
  const yauzl = yauzlModule();
  // decodeStrings off: yauzl would reject a bad name with a bare "invalid relative path"; ours names the entry.
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
    budget.announced(zip.entryCount);
    for await (const entry of zip.eachEntry()) {
      if (signal.aborted) break;
      const name = yauzl.getFileNameLowLevel(
        entry.generalPurposeBitFlag,
        entry.fileNameRaw,
        entry.extraFields,
        false,
      );
      const problem = yauzl.validateFileName(name);
      const kind = zipKind(entry, name);
      // Our own check first: its message is the clearer; yauzl's catches whatever ours might miss.
      const at = kind === 'symlink' ? '' : guard.check(name, kind);
      if (problem !== null) throw refusal(what, name, problem);
      // An entry left out is never read: it counts as an entry, not as bytes (a link's patterns judge it once read).
      const taken = kind === 'symlink' || selection === undefined || selection.takes(at, kind, name);
      budget.entry(taken ? entry.uncompressedSize : 0);
      budget.ratio(budget.expandedBytes, zipBytes);
      if (kind === 'symlink') {
        const target = await readSmall(await zip.openReadStreamPromise(entry), maxZipLinkBytes);
        if (target === undefined) throw refusal(what, name, 'its link target is too long');
        const text = target.toString('utf8');
        const linkAt = guard.check(name, 'symlink', text);
        if (selection === undefined || selection.takes(linkAt, 'symlink', name))
          links.push({ at: linkAt, target: text });
        continue;
      }
      if (!taken) continue;
      // Its dirs entered by handle, never through a link: the model server sharing the volume may plant one.
      await inRealDirs(
        root,
        at,
        async (to) => {
          if (kind === 'dir') return makeDirs(to, 0o755);
          const content = await zip.openReadStreamPromise(entry);
          // wx: a duplicate entry fails instead of silently replacing the first.
          const file = createWriteStream(to, { flags: 'wx' });
          await pipeline(content, crcChecked(entry.crc32, what, name), file, { signal });
        },
        0o755,
      );
    }
  } finally {
    zip.close();
  }
  signal.throwIfAborted();
  await makeLinks(root, links);
};
