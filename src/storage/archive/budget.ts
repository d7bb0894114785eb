/** ArchiveBudget: the caps of one extraction — entries, expanded bytes, expansion ratio — counted as entries come. */
import { showBytes } from '../../core/show-bytes';
import { ratioGraceBytes, tooLarge, type DownloadLimits } from '../download-limits';

/** The limits an extraction obeys: the model cap bounds what it expands to. */
export type ArchiveLimits = Pick<
  DownloadLimits,
  'maxModelBytes' | 'maxArchiveRatio' | 'maxArchiveEntries' | 'names'
>;

/**
 * Counts one archive's entries and the bytes they declare, before anything is written: tar and yauzl hold each entry
 * to its declared size, so these bound what reaches the disk. Each check throws a permanent `too-large` naming the
 * flag whose cap was passed.
 */
export class ArchiveBudget {
  private entries = 0;
  private expanded = 0;

  constructor(
    private readonly what: string,
    private readonly limits: ArchiveLimits,
  ) {}

  /** The bytes the entries counted so far declare. */
  get expandedBytes(): number {
    return this.expanded;
  }

  /** Fails at once when an archive announces more entries than the cap (a zip's central directory does). */
  announced(entries: number): void {
    const max = this.limits.maxArchiveEntries;
    if (entries > max) this.tooManyEntries(`it holds ${entries} entries, more than ${max}`);
  }

  /** Counts one entry that will write `size` bytes. */
  entry(size: number): void {
    this.entries += 1;
    const max = this.limits.maxArchiveEntries;
    if (this.entries > max) this.tooManyEntries(`it holds more than ${max} entries`);
    this.expanded += size;
    if (this.expanded > this.limits.maxModelBytes) {
      throw tooLarge(
        this.what,
        `it expands to more than ${showBytes(this.limits.maxModelBytes)}`,
        'maxModelBytes',
        this.limits.names,
      );
    }
  }

  /** Fails when `expanded` bytes came out of `compressed` ones past the ratio cap, once past `ratioGraceBytes`. */
  ratio(expanded: number, compressed: number): void {
    if (expanded <= ratioGraceBytes || expanded <= this.limits.maxArchiveRatio * compressed) return;
    throw tooLarge(
      this.what,
      `it expands more than ${this.limits.maxArchiveRatio} times (${showBytes(expanded)} ` +
        `from ${showBytes(compressed)})`,
      'maxArchiveRatio',
      this.limits.names,
    );
  }

  private tooManyEntries(why: string): never {
    throw tooLarge(this.what, why, 'maxArchiveEntries', this.limits.names);
  }
}
