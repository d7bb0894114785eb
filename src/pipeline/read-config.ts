/** readConfig: reads models.json at each trigger, one read at a time; a read that errors is a failed read. */
import * as E from 'fp-ts/Either';
import {
  catchError,
  defer,
  EMPTY,
  exhaustMap,
  of,
  repeat,
  tap,
  type Observable,
  type OperatorFunction,
} from 'rxjs';
import { configFileName } from '../core/config-files';
import { errorCode, errorMessage, readFailed } from '../core/errors';
import type { ConfigRead } from '../ports';

/**
 * Runs `read` at a trigger, one read at a time. Triggers that arrive during a read collapse into one read after
 * it: that read must still happen (it may be the only one to see a burst's final version), but a storm of
 * events must not queue a read per event. A `read` must not error; one that does (an integrator's
 * ConfigSource, a bug) yields a failed read of models.json, so the last good config stays in force and the next
 * trigger reads again, instead of the error ending the agent. Completes when the triggers have and the last
 * read is done.
 */
export const readConfig =
  <T>(read: () => Observable<ConfigRead>): OperatorFunction<T, ConfigRead> =>
  (trigger$) =>
    defer(() => {
      // A trigger came since the last read started: one more read is due.
      let pending = false;
      const readWhilePending = defer(read).pipe(
        catchError((cause: unknown) =>
          of(E.left(readFailed(configFileName, errorCode(cause) ?? 'EUNKNOWN', errorMessage(cause)))),
        ),
        tap({ subscribe: () => (pending = false) }),
        repeat({ delay: () => (pending ? of(true) : EMPTY) }),
      );
      return trigger$.pipe(
        tap(() => (pending = true)),
        exhaustMap(() => readWhilePending),
      );
    });
