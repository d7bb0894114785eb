/** What is in place when modelsync starts (the model dir, the server's index, the load journal), and the snapshot it means. */
import { takeByName } from './drift';
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

/**
 * The config in force while every read since the start is rejected (`keepValid`), undefined when nothing is on disk:
 * each model on disk with its marker's spec (one the server lost is loaded again), and each name only the server
 * lists carried over from `inPlaceSnapshot` as it is there (its `unknownSpec`, which `diff` takes for no change): a
 * bad config unloads nothing, as before the restart.
 */
export const installedInForce = (found: InPlace): Snapshot | undefined => {
  if (found.onDisk.size === 0) return undefined;
  const inForce = new Map(inPlaceSnapshot(found));
  for (const [name, spec] of found.onDisk) inForce.set(name, spec);
  return inForce;
};

/** What a start takes up of what it found, and how many of the server's names it leaves to the resyncs. */
export interface Adopted {
  readonly inPlace: InPlace;
  readonly deferred: number;
}

/**
 * Bounds what a start takes up of the server's index as a resync is bounded (docs/reliability.md, "Drift repair"):
 * every loaded model with files on disk, and at most `maxServerOnly` of the names only the server lists, taken as
 * `takeByName` takes them; the rest are left to the resyncs.
 */
export const adoptServerIndex = (found: InPlace, maxServerOnly: number): Adopted => {
  const onDisk = (name: string): boolean => found.onDisk.has(name as ModelName);
  const serverOnly = takeByName(
    [...found.loaded].filter((name) => !onDisk(name)),
    maxServerOnly,
  );
  const loaded = new Set([...found.loaded].filter(onDisk));
  for (const name of serverOnly.taken) loaded.add(name);
  return { inPlace: { ...found, loaded }, deferred: serverOnly.deferred };
};
