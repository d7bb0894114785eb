/** skipUnchangedReads: drops a read identical to the one before it (same bytes, or the same failure). */
import * as E from 'fp-ts/Either';
import { distinctUntilChanged, type MonoTypeOperatorFunction } from 'rxjs';
import { describeConfigError } from '../core/errors';
import type { ConfigRead } from '../ports';

const sameRead = (a: ConfigRead, b: ConfigRead): boolean =>
  E.isRight(a) && E.isRight(b)
    ? a.right.text === b.right.text
    : E.isLeft(a) && E.isLeft(b) && describeConfigError(a.left) === describeConfigError(b.left);

/**
 * Every burst is read twice and kubelet's link events come in pairs: identical content must cost nothing, and
 * a file that stays broken is reported once, not at every event. `onUnchanged` hears of each read dropped.
 */
export const skipUnchangedReads = (onUnchanged?: () => void): MonoTypeOperatorFunction<ConfigRead> =>
  distinctUntilChanged((previous, current) => {
    const same = sameRead(previous, current);
    if (same) onUnchanged?.();
    return same;
  });
