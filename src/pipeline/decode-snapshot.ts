/** decodeSnapshot: the text of models.json to a Snapshot, or the ConfigError that says what is wrong. */
import * as E from 'fp-ts/Either';
import { map, type OperatorFunction } from 'rxjs';
import { decodeConfig } from '../core/decode-config';
import type { ConfigError } from '../core/errors';
import type { Snapshot } from '../core/snapshot';
import type { ConfigRead } from '../ports';

/** Decodes each successful read; read failures pass through as they are. */
export const decodeSnapshot = (): OperatorFunction<ConfigRead, E.Either<ConfigError, Snapshot>> =>
  map(E.chain(({ file, text }) => decodeConfig(file, text)));
