/** JournalWriter: the load journal's file as this process reads and writes it, and the loads it holds. */
import type { Stats } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { journalRecord, readJournalRecords, type JournalEvent } from '../core/journal-records';
import type { ModelName } from '../core/model-name';
import { entryKind, isMissing, isNoSpace, isTransientFsError, quick, removeTree } from '../fs';
import type { Logger } from '../log';
import {
  legacyJournalDirName,
  openJournalFile,
  openJournalReadOnly,
  readJournalText,
  readLegacyJournalDir,
  writeJournalFile,
  type JournalFile,
} from './journal-file';

// Past this size (or twice what the last compaction wrote, when the loads still unconfirmed alone pass it) the file
// is rewritten with only those loads: a rewrite at every record past it made each load write them all again.
const compactAboveBytes = 1024 * 1024;

const noneIfMissing = (cause: unknown): [] => {
  if (isMissing(cause)) return [];
  throw cause;
};

/**
 * Reads the journal at `path` at start-up and appends records to it. Whatever sits there that this process did not
 * leave (a link, a dir, a FIFO, a file with other hard links, a file changed by someone else) is logged and
 * replaced, never followed; a journal swapped or deleted meanwhile is written anew from `pending`.
 */
export class JournalWriter {
  /** The loads started and not yet confirmed. */
  readonly pending = new Set<ModelName>();
  private file: JournalFile | undefined;
  // The journal file as this process last left it: anything else at the path means someone replaced it.
  private known: Stats | undefined;
  private tornTail = false;
  // What the last compaction wrote: the file is compacted again once it has grown to twice that.
  private compactedBytes = 0;

  constructor(
    readonly path: string,
    readonly log: Logger,
  ) {}

  /** Reads the journal at start-up: its file, the 0.1 journal dir, and no record of a model whose dir is gone. */
  async recover(root: string): Promise<void> {
    const { log, pending } = this;
    const legacy = await readLegacyJournalDir(root, log).catch((err: unknown) => {
      // Not ignored when it may pass: the dir is removed below, with the loads it holds.
      if (isTransientFsError(err)) throw err;
      log.warn({ err }, 'cannot read the 0.1 load journal dir; ignoring it');
      return [];
    });
    await this.readFound();
    // Below, a journal not open (not writable: a read-only one at start-up) is changed in memory only.
    for (const name of legacy) {
      if (pending.has(name)) continue;
      if (this.file === undefined) pending.add(name);
      else await this.appendAll([{ event: 'starting', name }]);
    }
    // Only once its loads are in the journal file: a crash before this reads the dir again.
    if (this.file !== undefined) await removeTree(join(root, legacyJournalDirName));
    // A record without a model dir (a crash between deleting a model and confirming it) means nothing any more. One
    // listing of the model dir and one write for all: a neighbour's journal may name thousands.
    const listed =
      pending.size === 0 ? [] : await readdir(root, { withFileTypes: true }).catch(noneIfMissing);
    const dirs = new Set(listed.filter((entry) => entry.isDirectory()).map(({ name }) => name));
    const gone = [...pending].filter((name) => !dirs.has(name));
    if (this.file === undefined) for (const name of gone) pending.delete(name);
    else await this.appendAll(gone.map((name) => ({ event: 'confirmed', name })));
  }

  /** Adds the records of `found` to the pending loads; true when they were all read cleanly. */
  private async readRecords(found: JournalFile): Promise<boolean> {
    const text = await readJournalText(found, this.path, this.log);
    if (text === undefined) return false;
    const content = readJournalRecords(text);
    for (const name of content.unconfirmed) this.pending.add(name);
    if (content.badLines > 0)
      this.log.warn(
        { path: this.path, badLines: content.badLines },
        'skipping load journal lines that are no record',
      );
    return !content.tornTail;
  }

  /** Reads the journal file as found, keeping it open for appending, or rewrites it when it is not fit to be. */
  private async readFound(): Promise<void> {
    const { path, log } = this;
    let found: JournalFile;
    try {
      found = await openJournalFile(path, log);
    } catch (err) {
      // A transient failure (EMFILE, EIO) is no read-only volume: the read is tried again (see loadJournal). A full
      // disk that cannot create the file is read as a read-only one: waiting for space would hold the start.
      if (isTransientFsError(err) && !isNoSpace(err)) throw err;
      log.warn({ err, path }, 'cannot open the load journal for writing; loads fail until it can be');
      // Still read it: a read-only model dir must not lose the loads its journal holds.
      const readOnly = await openJournalReadOnly(path);
      if (readOnly !== undefined) await this.readRecords(readOnly).finally(() => readOnly.handle.close());
      return;
    }
    // A torn last line (a crash mid-append) is dropped by a rewrite rather than left to become a bad line.
    const clean = await this.readRecords(found).catch(async (cause: unknown) => {
      await found.handle.close();
      throw cause;
    });
    this.adopt(found);
    // Until a compaction drops it, the next record must not be appended to the torn line.
    this.tornTail = !clean;
    if (found.stats.nlink > 1) await this.rewrite('a file with other hard links');
    else if (!clean || found.size > compactAboveBytes) await this.compactIfPossible();
  }

  /** Appends to `found`, the file read at start-up, from now on. */
  private adopt(found: JournalFile): void {
    this.file = found;
    this.known = found.stats;
  }

  async close(): Promise<void> {
    const open = this.file;
    this.file = undefined;
    if (open === undefined) return;
    this.known = await open.handle.stat().catch(() => this.known);
    await open.handle.close().catch(() => undefined);
  }

  /** Rewrites the journal with only the pending loads. */
  private async compact(): Promise<JournalFile> {
    const text = [...this.pending].map((name) => journalRecord('starting', name)).join('');
    const written = await writeJournalFile(this.path, text, this.log);
    this.compactedBytes = written.size;
    await this.close();
    this.known = written.stats;
    this.tornTail = false;
    this.file = written;
    return written;
  }

  /**
   * Compacts the journal, or leaves it as it is when it cannot be rewritten (a full or read-only disk): its records
   * are all there and appends may still fit, so a compaction is no reason to fail a load. Tried again past the bound.
   */
  private async compactIfPossible(): Promise<void> {
    await this.compact().catch((err: unknown) =>
      this.log.warn({ err, path: this.path }, 'cannot compact the load journal; appending to it as it is'),
    );
  }

  /** Rewrites the journal because what is at its path (`found`, in words) is not the file this process left there. */
  private rewrite(found: string): Promise<JournalFile> {
    this.log.warn(
      { path: this.path, found },
      'the load journal was replaced or removed by someone else; writing it anew',
    );
    return this.compact();
  }

  /**
   * Appends records in one write, in order, never flushed (see loadJournal): a group commit, one check of the file
   * and one write for a burst of loads. Leaves out a `confirmed` of a model with no load pending by then; compacts
   * a file grown past its bound.
   */
  async appendAll(
    records: ReadonlyArray<{ readonly event: JournalEvent; readonly name: ModelName }>,
  ): Promise<void> {
    // What the batch changes, over the loads pending before it (not copied: thousands may be).
    const changed = new Map<ModelName, boolean>();
    const kept = records.filter(({ event, name }) => {
      if (event === 'confirmed' && !(changed.get(name) ?? this.pending.has(name))) return false;
      changed.set(name, event === 'starting');
      return true;
    });
    if (kept.length === 0) return;
    const target = await this.writable();
    const text =
      (this.tornTail ? '\n' : '') + kept.map(({ event, name }) => journalRecord(event, name)).join('');
    // Until the write completes, a failure may have left part of a line: the next record starts a new one.
    this.tornTail = true;
    // A failed write may have left part of the line: the file is closed, and checked again when next opened.
    await target.handle.writeFile(text).catch(async (cause: unknown) => {
      await this.close();
      throw cause;
    });
    this.tornTail = false;
    target.size += Buffer.byteLength(text);
    for (const { event, name } of kept) {
      if (event === 'starting') this.pending.add(name);
      else this.pending.delete(name);
    }
    if (target.size > Math.max(compactAboveBytes, 2 * this.compactedBytes)) await this.compactIfPossible();
  }

  /** True when `found` is the journal file as we left it (inode numbers alone are reused once a file is deleted). */
  private asLeft(found: Stats): boolean {
    const known = this.known;
    return (
      known === undefined ||
      (found.dev === known.dev &&
        found.ino === known.ino &&
        found.size === known.size &&
        found.mtimeMs === known.mtimeMs)
    );
  }

  /** The journal file, open, checked to be the one this process left at the path; written anew when it is not. */
  private async writable(): Promise<JournalFile> {
    const now = await quick.lstat(this.path).catch(() => undefined);
    const held = this.file;
    if (held !== undefined) {
      if (now?.isFile() && now.dev === held.stats.dev && now.ino === held.stats.ino) {
        // Our file, but linked elsewhere too or written by someone else meanwhile: not ours alone any more.
        if (now.nlink === 1 && now.size === held.size) return held;
        await this.close();
        return this.rewrite(
          now.nlink === 1 ? 'the file changed by someone else' : 'a file with other hard links',
        );
      }
      await this.close();
    } else if (now?.isFile() && now.nlink === 1 && this.asLeft(now)) {
      const opened = await openJournalFile(this.path, this.log);
      if (opened.stats.ino === now.ino && opened.stats.dev === now.dev) {
        this.adopt(opened);
        return opened;
      }
      await opened.handle.close();
    }
    if (now === undefined) return this.known === undefined ? this.compact() : this.rewrite('nothing');
    return this.rewrite(now.isFile() ? 'another file' : entryKind(now));
  }
}
