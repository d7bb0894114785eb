/** unpack: what extracting either format shares — one extraction's job, and how its failures are classified. */
import { EffectError, errorCode, errorMessage, permanentError, retryableError } from '../../core/errors';
import { fsError, isTransientFsError } from '../../fs';
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
    return permanentError('invalid-archive', `${what}: invalid archive: ${errorMessage(cause)}`, cause);
  };

/** The failure of an archive cut short: retryable, since the connection may have cut it (a whole one comes next). */
export const truncatedArchive = (what: string, why: string): EffectError =>
  retryableError('invalid-archive', `${what}: truncated archive: ${why}`);
