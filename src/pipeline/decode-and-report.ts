/** decodeAndReport: decodeSnapshot, telling the telemetry of each read whether it was accepted or rejected. */
import type { Either } from 'fp-ts/Either';
import * as E from 'fp-ts/Either';
import { concatMap, of, tap, type OperatorFunction } from 'rxjs';
import { describeConfigError, type ConfigError } from '../core/errors';
import type { Snapshot } from '../core/snapshot';
import type { ConfigRead, Telemetry } from '../ports';
import { decodeSnapshot } from './decode-snapshot';

/**
 * Decodes each read (`decodeSnapshot`) and tells `telemetry` that it was accepted, with `checksumOf` its text (which
 * config is in force, without showing it), or rejected, with the reason in words.
 */
export const decodeAndReport =
  (
    telemetry: Telemetry,
    checksumOf: (text: string) => string,
  ): OperatorFunction<ConfigRead, Either<ConfigError, Snapshot>> =>
  (read$) =>
    read$.pipe(
      concatMap((read) =>
        of(read).pipe(
          decodeSnapshot(),
          tap((result) =>
            E.isRight(result)
              ? telemetry.configRead('accepted', {
                  checksum: checksumOf(E.isRight(read) ? read.right.text : ''),
                })
              : telemetry.configRead('rejected', { reason: describeConfigError(result.left) }),
          ),
        ),
      ),
    );
