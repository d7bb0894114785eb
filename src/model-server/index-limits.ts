/** What modelsync takes from a model server's index or model list: a bounded set of valid model names. */
import { modelNameProblem } from '../core/model-name';

/**
 * The bounds of one index or listing: its body (per page, for TorchServe) and the loaded names taken from it. A
 * server inventing names cannot make a resync read, remember or act on more than this (the repairs themselves are
 * capped by `--max-unlisted-unloads`); 100,000 is ten times the largest config measured (10,000 models).
 */
export const serverIndexLimits = { maxBytes: 16 * 1024 * 1024, maxModels: 100_000 } as const;

/**
 * The loaded names modelsync may act on: valid model names only (`.tmp-…`, a path are nobody's model
 * to repair), at most `serverIndexLimits.maxModels` of them, in the server's order.
 */
export const loadedModelNames = (names: Iterable<string>): Set<string> => {
  const taken = new Set<string>();
  for (const name of names) {
    if (taken.size >= serverIndexLimits.maxModels) break;
    if (modelNameProblem(name) === undefined) taken.add(name);
  }
  return taken;
};
