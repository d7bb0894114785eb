/** Production wiring: builds the real edges from an AppConfig and runs a mode of modelsync as one Observable. */
import { either as E } from 'fp-ts';
import type { Logger } from 'pino';
import { concatMap, EMPTY, from, map, mergeMap, of, type Observable } from 'rxjs';
import { currentModelOps, modelOps } from './app';
import type { AppConfig } from './core/app-config';
import { describeConfigError } from './core/errors';
import { modelOpToJson } from './core/model-op';
import { emptySnapshot } from './core/snapshot';
import { configDirSource } from './edge/config-dir';

/** What a mode emits: a line for stdout, or an exit code that ends the process. */
export type Output =
  { readonly _tag: 'Line'; readonly line: string } | { readonly _tag: 'Exit'; readonly code: number };

const line = (text: string): Output => ({ _tag: 'Line', line: text });
const exit = (code: number): Output => ({ _tag: 'Exit', code });

/** `--dry-run`: one JSON line per ModelOp, live (or, with `--once`, for the current config, then exit). */
export const dryRun = (config: AppConfig, log: Logger): Observable<Output> => {
  const configSource = configDirSource({
    dir: config.configDir,
    log: log.child({ component: 'config' }),
    pollMs: config.watchPollMs,
  });
  const initial = emptySnapshot;
  if (config.once) {
    return currentModelOps({ configSource, initial }).pipe(
      mergeMap((result) => {
        if (E.isLeft(result)) {
          log.error({ file: result.left.file, configError: result.left }, describeConfigError(result.left));
          return of(exit(1));
        }
        return from([...result.right.map((op) => line(JSON.stringify(modelOpToJson(op)))), exit(0)]);
      }),
    );
  }
  return modelOps({ configSource, initial, log, settleMs: config.settleMs }).pipe(
    map((op) => line(JSON.stringify(modelOpToJson(op)))),
  );
};

/** The whole agent. */
export const agent = (config: AppConfig, log: Logger): Observable<Output> => {
  log.error({ modelDir: config.modelDir }, 'the loader is not available yet; run with --dry-run');
  return of(exit(2)).pipe(concatMap((o) => (o._tag === 'Exit' ? of(o) : EMPTY)));
};
