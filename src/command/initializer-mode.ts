/**
 * The storage initializer: `modelsync <uri> <dest> [<uri> <dest> …]`, as KServe's `storage-initializer` init
 * container is run. Downloads each URI into its dest with the agent's providers, guards and caps, then exits.
 */
import type { Logger } from 'pino';
import { of, type Observable } from 'rxjs';
import type { Env } from '../core/env';
import type { AppConfig } from '../core/flags/app-config';
import type { Output } from './modes';

/** One `<uri> <dest>` pair of the command line. */
export interface DownloadPair {
  readonly uri: string;
  readonly dest: string;
}

/** Downloads every pair, then exits 0; or exits 1 after one line naming the (redacted) URI and the reason. */
export const initializerMode = (
  _pairs: ReadonlyArray<DownloadPair>,
  _config: AppConfig,
  log: Logger,
  _env: Env,
): Observable<Output> => {
  log.error('the storage initializer is not built yet');
  return of({ _tag: 'Exit', code: 1 } as const);
};
