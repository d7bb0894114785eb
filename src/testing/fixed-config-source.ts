/** fixedConfigSource: a config dir nobody edits, as a ConfigSource: models.json with a given text, or none. */
import * as E from 'fp-ts/Either';
import { EMPTY, of } from 'rxjs';
import { configFileName } from '../core/config-files';
import { readFailed } from '../core/errors';
import type { ConfigSource } from '../ports';

/**
 * `read` gives `text` as the content of `file`, or, without `text`, fails the way a missing models.json does (the
 * agent applies no model from it). `events$` completes at once: nothing will change, so an agent on this source
 * completes once the config is applied, or at once without `text`; `opOperators` can feed it ops instead.
 */
export const fixedConfigSource = (text?: string, file = `/fixed-config/${configFileName}`): ConfigSource => ({
  events$: EMPTY,
  read: () =>
    of(
      text === undefined
        ? E.left(readFailed(file, 'ENOENT', 'ENOENT: no such file or directory'))
        : E.right({ file, text }),
    ),
});
