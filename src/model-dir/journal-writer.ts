/** JournalWriter: the load journal's file as this process writes it, checked at each use, and the loads it holds. */
import type { Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { journalRecord, type JournalEvent } from '../core/journal-records';
import type { ModelName } from '../core/model-name';
import { entryKind } from '../fs';
import type { Logger } from '../log';
import { openJournalFile, writeJournalFile, type JournalFile } from './journal-file';

// Past this size the file is rewritten with only the loads still unconfirmed.
export const compactAboveBytes = 1024 * 1024;

/**
 * Appends records to the journal at `path`. Whatever sits there that this process did not leave (a link, a dir, a
 * FIFO, a file with other hard links, a file changed by someone else) is logged and replaced, never followed; a
 * journal swapped or deleted meanwhile is written anew from `pending`.
 */
export class JournalWriter {
  /** The loads started and not yet confirmed. */
  readonly pending = new Set<ModelName>();
  private file: JournalFile | undefined;
  // The journal file as this process last left it: anything else at the path means someone replaced it.
  private known: Stats | undefined;
  private tornTail = false;

  constructor(
    readonly path: string,
    readonly log: Logger,
  ) {}

  /** True while the journal is writable: open now, or fit to be opened (a read-only one at start-up is not). */
  get isOpen(): boolean {
    return this.file !== undefined;
  }

  /** Appends to `found`, the file read at start-up, from now on. */
  adopt(found: JournalFile): void {
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
  async compact(): Promise<JournalFile> {
    const text = [...this.pending].map((name) => journalRecord('starting', name)).join('');
    const written = await writeJournalFile(this.path, text, this.log);
    await this.close();
    this.known = written.stats;
    this.tornTail = false;
    this.file = written;
    return written;
  }

  /** Rewrites the journal because what is at its path (`found`, in words) is not the file this process left there. */
  rewrite(found: string): Promise<JournalFile> {
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
    const pending = new Set(this.pending);
    const kept = records.filter(({ event, name }) => {
      if (event === 'confirmed' && !pending.has(name)) return false;
      if (event === 'starting') pending.add(name);
      else pending.delete(name);
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
    if (target.size > compactAboveBytes) await this.compact();
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
    const now = await lstat(this.path).catch(() => undefined);
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
