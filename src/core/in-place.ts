/** What is in place when modelsync starts (the model dir, the server's index, the load journal), and the snapshot it means. */
import type { ModelName } from './model-name';
import type { ModelSpec } from './model-config';
import { unknownSpec, type Snapshot } from './snapshot';

/** What a start finds: models on disk (by their markers), loaded on the server, and loads never confirmed. */
export interface InPlace {
  readonly onDisk: Snapshot;
  readonly loaded: ReadonlySet<string>;
  /** Models whose last load was never confirmed: the server may hold another version, so load them again. */
  readonly unconfirmed?: ReadonlySet<string>;
}

/**
 * The snapshot the first config is diffed against. Models both on disk and loaded (and whose last load was
 * confirmed) are in place with their on-disk spec (no download, no load on restart); models on only one side
 * get `unknownSpec`, so nothing half-done is left as it is.
 */
export const inPlaceSnapshot = ({ onDisk, loaded, unconfirmed = new Set() }: InPlace): Snapshot => {
  const result = new Map<ModelName, ModelSpec>();
  for (const [name, spec] of onDisk)
    result.set(name, loaded.has(name) && !unconfirmed.has(name) ? spec : unknownSpec);
  for (const name of loaded) if (!onDisk.has(name as ModelName)) result.set(name as ModelName, unknownSpec);
  return result;
};
