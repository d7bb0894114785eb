/** readConfig: reads models.json once per trigger, in order. */
import { concatMap, type Observable, type OperatorFunction } from 'rxjs';
import type { ConfigRead } from '../ports';

/**
 * Runs `read` for every trigger, one at a time (`concatMap`: a trailing trigger that arrives during a read must
 * still cause a read, or the final version of a burst could be missed). `read` never errors.
 */
export const readConfig =
  <T>(read: () => Observable<ConfigRead>): OperatorFunction<T, ConfigRead> =>
  (trigger$) =>
    trigger$.pipe(concatMap(() => read()));
