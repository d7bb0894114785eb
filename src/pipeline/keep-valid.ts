/** keepValid: logs a rejected config and drops it, so the previous good snapshot stays in force. */
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import { filter, map, tap, type OperatorFunction } from 'rxjs';
import { describeConfigError, type ConfigError } from '../core/errors';
import type { Snapshot } from '../core/snapshot';

/**
 * One warn line per rejected config, naming the file and every bad field; nothing goes downstream, so
 * `toModelOps` keeps diffing against the last good snapshot and a bad edit never unloads a model.
 */
export const keepValid =
  (log: Pick<Logger, 'warn'>): OperatorFunction<E.Either<ConfigError, Snapshot>, Snapshot> =>
  (result$) =>
    result$.pipe(
      tap((result) => {
        if (E.isLeft(result))
          log.warn(
            { file: result.left.file, configError: result.left, reason: describeConfigError(result.left) },
            'config rejected; keeping the previous models',
          );
      }),
      filter(E.isRight),
      map((result) => result.right),
    );
