/** EntrySelection: which entries of an archive (or files of a local tree) a model's patterns take, and that they take some. */
import { permanentError } from '../../core/errors';
import { fileFilter, selectedNone, type FileSelection } from '../../core/file-selection';
import { entryPathOf, refusal, type EntryKind } from './guard';

/**
 * The patterns of one extraction, matched against each entry's path in the model dir (as an object's path in a
 * bucket is). Files and links are taken when they pass; directory entries never are, so only the dirs of the files
 * that land are made (as huggingface_hub's snapshots hold only files).
 */
export class EntrySelection {
  /** True for a path the patterns take. */
  readonly passes: (path: string) => boolean;
  private readonly taken = new Set<string>();
  private files = 0;

  constructor(
    private readonly what: string,
    private readonly select: FileSelection,
  ) {
    this.passes = fileFilter(select);
  }

  /**
   * True when the entry at `entryPath` (checked by the guard) is to be written. A hard link the patterns take to a
   * file they leave out is refused: its bytes are that file's, which is not extracted.
   */
  takes(entryPath: string, kind: EntryKind, name: string, linkTarget = ''): boolean {
    if (kind === 'dir') return false;
    this.files += 1;
    if (!this.passes(entryPath)) return false;
    if (kind === 'hardlink') {
      const target = entryPathOf(linkTarget, () => {
        throw refusal(this.what, name, 'its link target is refused');
      });
      if (!this.taken.has(target)) {
        throw refusal(this.what, name, `it hard-links ${target}, which the model's patterns leave out`);
      }
    }
    this.taken.add(entryPath);
    return true;
  }

  /** Fails for good (`not-found`) when the patterns took none of the archive's files. */
  checkSomeTaken(): void {
    if (this.taken.size > 0) return;
    const files = this.files === 1 ? 'file' : 'files';
    throw permanentError('not-found', `${this.what}: ${selectedNone(this.select, this.files, files)}`);
  }
}
