/** unpack: what extracting either format shares — one extraction's job, and how its failures are classified. */
import { symlink } from 'node:fs/promises';
import { EffectError, errorCode, errorMessage, permanentError, retryableError } from '../../core/errors';
import { fsError, inRealDirs, isTransientFsError } from '../../fs';
import type { ArchiveBudget } from './budget';
import type { EntrySelection } from './entry-selection';
import type { EntryGuard } from './guard';

/** One extraction: where it writes, its checks, the entries it takes (absent: all), and how a refusal stops it. */
export interface Job {
  readonly what: string;
  readonly root: string;
  readonly guard: EntryGuard;
  readonly budget: ArchiveBudget;
  readonly selection?: EntrySelection;
  readonly signal: AbortSignal;
  readonly refuse: (error: EffectError) => void;
}

/** The failure of an archive whose bytes are all there: only a transient fs error may pass on a retry. */
export const archiveFailure =
  (what: string) =>
  (cause: unknown): unknown => {
    if (cause instanceof EffectError) return cause;
    if (isTransientFsError(cause)) return fsError(what, cause);
    // tar's own guard, the same refusal as ours (entries combined into a way out through a link).
    if (errorCode(cause) === 'TAR_SYMLINK_ERROR') {
      return permanentError(
        'refused',
        `${what}: refusing archive entry: it would be written through a symbolic link`,
        cause,
      );
    }
    return invalidArchive(what, errorMessage(cause), cause);
  };

/** The failure of an archive cut short: retryable, since the connection may have cut it (a whole one comes next). */
export const truncatedArchive = (what: string, why: string): EffectError =>
  retryableError('invalid-archive', `${what}: truncated archive: ${why}`);

/** An archive that is not one modelsync can install (the same bytes again would fail alike): `why` says what it holds. */
export const invalidArchive = (what: string, why: string, cause?: unknown): EffectError =>
  permanentError('invalid-archive', `${what}: invalid archive: ${why}`, cause);

/** A symlink an archive holds: where it goes (relative to the root, checked by the guard) and what it points at. */
export interface ArchiveLink {
  readonly at: string;
  readonly target: string;
}

/**
 * Makes the archive's symlinks once all its files are written: none of them can be written through one, and the
 * extractor never has to look through the root, which the model store hands over as a link (`/proc/self/fd/<n>`).
 */
export const makeLinks = async (root: string, links: ReadonlyArray<ArchiveLink>): Promise<void> => {
  // Each one's dirs entered by handle: the model server sharing the volume may have made one of them a link.
  for (const { at, target } of links) await inRealDirs(root, at, (to) => symlink(target, to), 0o755);
};
