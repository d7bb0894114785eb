/** keepValid: logs a rejected config and drops it, so the previous good snapshot stays in force. */
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import { concatMap, defer, tap, type OperatorFunction } from 'rxjs';
import { describeConfigError, type ConfigError } from '../core/errors';
import type { Snapshot } from '../core/snapshot';

/**
 * One warn line per rejected config, naming the file and every bad field; nothing goes downstream, so
 * `toModelOps` keeps diffing against the last good snapshot and a bad edit never unloads a model. Before any read
 * is accepted, the last good config is what was `installed` before the start (the models recovered from the model
 * dir): at the first rejection it goes downstream once, with one warn line, so a restart while models.json is bad
 * keeps those models loaded (a server that lost them gets them back) instead of nothing being in force.
 */
export const keepValid =
  (
    log: Pick<Logger, 'warn'>,
    installed?: Snapshot,
  ): OperatorFunction<E.Either<ConfigError, Snapshot>, Snapshot> =>
  (result$) =>
    defer(() => {
      let inForce = false;
      return result$.pipe(
        tap((result) => {
          if (E.isLeft(result))
            log.warn(
              { file: result.left.file, configError: result.left, reason: describeConfigError(result.left) },
              'config rejected; keeping the previous models',
            );
        }),
        concatMap((result): Snapshot[] => {
          if (E.isRight(result)) {
            inForce = true;
            return [result.right];
          }
          if (inForce || installed === undefined || installed.size === 0) return [];
          inForce = true;
          log.warn(
            { modelCount: installed.size },
            'no config accepted since the start: the models installed before it stay in force',
          );
          return [installed];
        }),
      );
    });
