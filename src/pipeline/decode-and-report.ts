/** decodeAndReport: decodeSnapshot, telling the telemetry of each read whether it was accepted or rejected. */
import type { Either } from 'fp-ts/Either';
import * as E from 'fp-ts/Either';
import { defer, tap, type OperatorFunction } from 'rxjs';
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
    defer(() => {
      // One decodeSnapshot for every read (it decodes again only what a read changed); each result follows its read
      // at once, so the text it was decoded from is the one just seen.
      let text = '';
      return read$.pipe(
        tap((read) => {
          text = E.isRight(read) ? read.right.text : '';
        }),
        decodeSnapshot(),
        tap((result) =>
          E.isRight(result)
            ? telemetry.configRead('accepted', { checksum: checksumOf(text) })
            : telemetry.configRead('rejected', { reason: describeConfigError(result.left) }),
        ),
      );
    });
