/** warnUnservedSchemes: one warn line per model whose storage URI has a scheme no provider serves, as configs arrive. */
import type { Logger } from 'pino';
import { defer, tap, type MonoTypeOperatorFunction } from 'rxjs';
import { unservedModels } from '../core/served-schemes';
import { emptySnapshot, type Snapshot } from '../core/snapshot';

/** One warn line for each model of `next` that `unservedModels` finds (new or changed since `previous`). */
export const logUnservedModels = (
  log: Pick<Logger, 'warn'>,
  schemes: ReadonlyArray<string>,
  previous: Snapshot,
  next: Snapshot,
): void => {
  for (const { model, storageUri, scheme } of unservedModels(previous, next, schemes)) {
    log.warn(
      { model, storageUri, scheme, servedSchemes: schemes },
      `no storage provider serves ${scheme}://; the model will fail`,
    );
  }
};

/**
 * Passes snapshots through and warns, once per model and URI, when no provider serves the URI's scheme
 * (`s3://` on a build without S3): the model would only fail once its download starts. `schemes` are the
 * router's (`routeStorage(...).schemes`), never a list of their own.
 */
export const warnUnservedSchemes =
  (schemes: ReadonlyArray<string>, log: Pick<Logger, 'warn'>): MonoTypeOperatorFunction<Snapshot> =>
  (snapshot$) =>
    defer(() => {
      let previous = emptySnapshot;
      return snapshot$.pipe(
        tap((snapshot) => {
          logUnservedModels(log, schemes, previous, snapshot);
          previous = snapshot;
        }),
      );
    });
