/** readConfig: reads models.json once per trigger, in order; a read that errors is a failed read, not the end. */
import { either as E } from 'fp-ts';
import { catchError, concatMap, of, type Observable, type OperatorFunction } from 'rxjs';
import { configFileName } from '../core/config-files';
import { errorCode, errorMessage, readFailed } from '../core/errors';
import type { ConfigRead } from '../ports';

/**
 * Runs `read` for every trigger, one at a time (`concatMap`: a trailing trigger that arrives during a read must
 * still cause a read, or the final version of a burst could be missed). A `read` must not error; one that does
 * (an integrator's ConfigSource, a bug) yields a failed read of models.json, so the last good config stays in
 * force and the next trigger reads again, instead of the error ending the agent.
 */
export const readConfig =
  <T>(read: () => Observable<ConfigRead>): OperatorFunction<T, ConfigRead> =>
  (trigger$) =>
    trigger$.pipe(
      concatMap(() =>
        read().pipe(
          catchError((cause: unknown) =>
            of(E.left(readFailed(configFileName, errorCode(cause) ?? 'EUNKNOWN', errorMessage(cause)))),
          ),
        ),
      ),
    );
