/** decodeSnapshot: the text of models.json to a Snapshot, or the ConfigError that says what is wrong. */
import * as E from 'fp-ts/Either';
import { defer, map, type OperatorFunction } from 'rxjs';
import { configDecoder } from '../core/config-decoder';
import type { ConfigError } from '../core/errors';
import type { Snapshot } from '../core/snapshot';
import type { ConfigRead } from '../ports';

/**
 * Decodes each successful read; read failures pass through as they are. Each subscription decodes with a decoder of
 * its own, which decodes again only the entries a read changed.
 */
export const decodeSnapshot = (): OperatorFunction<ConfigRead, E.Either<ConfigError, Snapshot>> => (reads) =>
  defer(() => {
    const decode = configDecoder();
    return reads.pipe(map(E.chain(({ file, text }) => decode(file, text))));
  });
