/** startupSnapshot: what is already in place when modelsync starts, from the model dir and the server's index. */
import type { ModelName } from './model-name';
import type { ModelSpec } from './model-config';
import { unknownSpec, type Snapshot } from './snapshot';

/**
 * Models both on disk and loaded (and whose last load was confirmed) count as in place with their on-disk spec (no download, no load on restart);
 * models on only one side count as `unknownSpec`, so nothing half-done is left as it is.
 */
export const startupSnapshot = (
  onDisk: Snapshot,
  loaded: ReadonlySet<string>,
  unconfirmed: ReadonlySet<string> = new Set(),
): Snapshot => {
  const result = new Map<ModelName, ModelSpec>();
  for (const [name, spec] of onDisk)
    result.set(name, loaded.has(name) && !unconfirmed.has(name) ? spec : unknownSpec);
  for (const name of loaded) if (!onDisk.has(name as ModelName)) result.set(name as ModelName, unknownSpec);
  return result;
};
