/** untar: a tar, gzipped or not, streamed through tar's Unpack — every entry guarded and counted, its end required. */
import { modelFileMode } from '../../core/model-file-mode';
import { randomBytes } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadEntry, Unpack } from 'tar';
import { lazyModule } from '../../core/lazy-module';
import { EffectError, errorCode } from '../../core/errors';
import { consume, inRealDirs, makeDirs, removeTree } from '../../fs';
import type { ArchiveBudget } from './budget';
import { compressionMagicBytes, unreadCompression } from './compressions';
import type { EntryKind } from './guard';
import {
  archiveFailure,
  invalidArchive,
  makeLinks,
  truncatedArchive,
  type ArchiveLink,
  type Job,
} from './unpack';

// Loaded at the first archive: most models are no tar, and tar and its dependencies cost ~10 ms of every start
// (node:zlib ~0.4 MiB of RSS).
/* eslint-disable @typescript-eslint/no-require-imports -- loaded at the first tar (lazy-module.ts) */
const tarModule = lazyModule(() => require('tar') as typeof import('tar'));
const zlib = lazyModule(() => require('node:zlib') as typeof import('node:zlib'));
/* eslint-enable @typescript-eslint/no-require-imports */

// Every other type (devices, FIFOs, ...) is `other`, and refused.
const tarKinds: Readonly<Record<string, EntryKind>> = {
  File: 'file',
  OldFile: 'file',
  ContiguousFile: 'file',
  Directory: 'dir',
  GNUDumpDir: 'dir',
  SymbolicLink: 'symlink',
  Link: 'hardlink',
};
const tarKind = (entry: ReadEntry): EntryKind => tarKinds[entry.type] ?? 'other';

/**
 * A plain tar passed through, a gzipped one (by its magic bytes) gunzipped, held to the budget's ratio; `tar` learns
 * that the stream is gzipped, and that it ended whole (its trailer checked: no retry can fetch other bytes).
 */
async function* gunzipIfGzipped(
  source: AsyncIterable<Buffer>,
  budget: ArchiveBudget,
  tar: TarStream,
  what: string,
): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < compressionMagicBytes) {
    const next = await iterator.next();
    if (next.done === true) break;
    head = Buffer.concat([head, next.value]);
  }
  const compression = unreadCompression(head);
  if (compression !== undefined) {
    const why = `the tar is compressed with ${compression}, which modelsync does not read (only gzip: .tar.gz, .tgz)`;
    throw invalidArchive(what, why);
  }
  let compressed = 0;
  async function* all(): AsyncGenerator<Buffer> {
    compressed += head.length;
    if (head.length > 0) yield head;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
      compressed += next.value.length;
      yield next.value;
    }
  }
  if (head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* all();
    return;
  }
  tar.gzip = 'open';
  const gunzip = zlib().createGunzip();
  const feeding = pipeline(all(), gunzip);
  // A feeding failure destroys gunzip and surfaces from the loop below: no unhandled rejection here.
  feeding.catch(() => undefined);
  let expanded = 0;
  for await (const chunk of gunzip) {
    expanded += (chunk as Buffer).length;
    budget.ratio(expanded, compressed);
    yield chunk as Buffer;
  }
  await feeding;
  tar.gzip = 'whole';
}

/** What the tar stream (gunzipped) showed: its first block, whether it ended, whether tar saw its end blocks. */
class TarStream {
  private head = Buffer.alloc(0);
  private bytes = 0;
  private ended = false;
  /** Set by tar's `eof` event: the two zero blocks that end an archive came. */
  sawEnd = false;
  /** Set by gunzipIfGzipped: a gzip stream (`open`), whose trailer came and matched (`whole`). */
  gzip: 'no' | 'open' | 'whole' = 'no';

  async *watch(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      if (this.head.length < 512) this.head = Buffer.concat([this.head, chunk]).subarray(0, 512);
      this.bytes += chunk.length;
      yield chunk;
    }
    this.ended = true;
  }

  /**
   * The failure `cause` says, when it says more than tar's own words: a gzip stream without its trailer, a tar that
   * ended inside an entry (both cut short), a stream whose first block is no tar header (no tar at all).
   */
  truncation(cause: unknown, what: string): EffectError | undefined {
    if (cause instanceof EffectError) return undefined;
    const code = errorCode(cause);
    if (code === 'Z_BUF_ERROR') return truncatedArchive(what, 'the gzip stream ended before its trailer');
    if (this.head.length === 512 && !this.beginsLikeTar()) {
      const found = `${this.gzip === 'no' ? 'its' : 'the gzip stream holds no tar: its'} first 512 bytes are no tar header`;
      return invalidArchive(what, found, cause);
    }
    if (code !== 'TAR_BAD_ARCHIVE' || !this.ended || this.sawEnd) return undefined;
    return this.missingEnd(what);
  }

  /**
   * The failure of a tar that ended without its end-of-archive blocks: cut short, unless a whole gzip stream held it
   * (a retry would fetch the same bytes: a gzipped payload that is no tar, or a tar made without its end).
   */
  missingEnd(what: string): EffectError {
    if (this.gzip !== 'whole')
      return truncatedArchive(what, 'the tar ended before its end-of-archive blocks');
    const found =
      this.bytes < 512
        ? `holds no tar: ${this.bytes} bytes, fewer than one header`
        : 'the tar in it ends without its end-of-archive blocks';
    return invalidArchive(what, `the gzip stream is whole but ${found}`);
  }

  // A stream too short for one header may be any cut tar; a longer one must open with a header or a zero block.
  private beginsLikeTar(): boolean {
    if (this.head.length < 512) return true;
    try {
      const header = new (tarModule().Header)(this.head);
      return header.nullBlock || header.cksumValid;
    } catch {
      return false;
    }
  }
}

/** tar's Unpack as a Writable whose end waits for 'finish' (every entry on disk): pipeline alone would not. */
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

// A write tar started ends in milliseconds; the cap only keeps a stuck filesystem from holding a download forever.
const settleTimeoutMs = 30_000;

/** Ends `unpack` after a failure and waits for its writes, which would race the model store removing the dir. */
const settle = (unpack: Unpack, finished: () => boolean): Promise<void> =>
  finished()
    ? Promise.resolve()
    : new Promise((resolve) => {
        const timer = setTimeout(resolve, settleTimeoutMs);
        unpack.once('finish', () => {
          clearTimeout(timer);
          resolve();
        });
        unpack.end();
      });

/** `path` without its empty and `.` parts: the same file, as tar writes an entry's path. */
const withoutDotParts = (path: string): string =>
  path
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/');

/** Extracts the tar (maybe gzipped) read from `source` into `job.root`, each entry guarded and counted first. */
export const untarInto = (
  source: AsyncIterable<Uint8Array>,
  { what, root, guard, budget, selection, signal, refuse }: Job,
): Promise<void> => {
  const tar = new TarStream();
  // Made by us once every file is written, as a zip's: tar checks a link's way for links from its cwd, and the cwd
  // the model store gives is a link itself (/proc/self/fd/<n>), so it refused `self -> .` and `sub/up -> ..`.
  const links: ArchiveLink[] = [];
  // tar writes each file (and hard link) at a top-level name of its own, no dir on its way: its check for links on
  // the way ran before each write, and the model server sharing the volume could swap a dir for a link between the
  // two. Once tar ends they are renamed into place in the archive's order (a later entry of a name replaces an
  // earlier one, as tar does), their dirs entered by handle.
  const flat = `.modelsync-${randomBytes(6).toString('hex')}-`;
  const placements: Array<{ readonly at: string; readonly written?: string }> = [];
  const writtenAt = new Map<string, string>();
  const unpack = tarModule().extract({
    cwd: root,
    strict: true,
    // As root, tar would chown entries to the archive's uids.
    preserveOwner: false,
    dmode: 0o755,
    filter: (_path, entry) => {
      const readEntry = entry as ReadEntry;
      const kind = tarKind(readEntry);
      try {
        const at = guard.check(readEntry.path, kind, readEntry.linkpath ?? '');
        // An entry left out is read past, never written: it counts as an entry, not as bytes on disk.
        if (selection !== undefined && !selection.takes(at, kind, readEntry.path, readEntry.linkpath ?? '')) {
          budget.entry(0);
          return false;
        }
        budget.entry(readEntry.size ?? 0);
        if (kind === 'symlink') {
          // At the name tar writes a file at (a backslash is no separator here); the guard refused any `..` part.
          links.push({ at: readEntry.path.replace(/\/+$/, ''), target: readEntry.linkpath ?? '' });
          return false;
        }
        const place = withoutDotParts(readEntry.path);
        if (kind === 'dir') {
          placements.push({ at: place });
          return false;
        }
        const written = `${flat}${placements.length}`;
        // Linked to the entry as tar wrote it (a link to a name no earlier entry wrote fails, as it did).
        if (kind === 'hardlink')
          readEntry.linkpath = writtenAt.get(withoutDotParts(readEntry.linkpath ?? '')) ?? `${flat}none`;
        placements.push({ at: place, written });
        writtenAt.set(place, written);
        readEntry.path = written;
      } catch (error) {
        refuse(error as EffectError);
        return false;
      }
      readEntry.mode = modelFileMode(readEntry.mode ?? 0o644);
      return true;
    },
  });
  unpack.on('eof', () => (tar.sawEnd = true));
  let finished = false;
  unpack.once('finish', () => (finished = true));
  return consume(
    source,
    signal,
    async (chunks) => {
      try {
        try {
          await pipeline(
            chunks,
            (gzipped: AsyncIterable<Buffer>) => gunzipIfGzipped(gzipped, budget, tar, what),
            (plain: AsyncIterable<Buffer>) => tar.watch(plain),
            unpackSink(unpack),
            { signal },
          );
        } catch (cause) {
          await settle(unpack, () => finished);
          throw tar.truncation(cause, what) ?? cause;
        }
        if (!tar.sawEnd) throw tar.missingEnd(what);
        signal.throwIfAborted();
        for (const { at, written } of placements)
          if (at !== '')
            await inRealDirs(
              root,
              at,
              (to) => (written === undefined ? makeDirs(to, 0o755) : rename(`${root}/${written}`, to)),
              0o755,
            );
      } catch (cause) {
        // What tar wrote and was not moved into place yet is no file of the model.
        for (const { written } of placements)
          if (written !== undefined) await removeTree(`${root}/${written}`).catch(() => undefined);
        throw cause;
      }
      await makeLinks(root, links);
    },
    archiveFailure(what),
  );
};
