/** Snapshot: the models one accepted config lists, by name; compared semantically. */
import { selectionKey } from './file-selection';
import type { ModelName } from './model-name';
import { ModelSpec, type ModelSpecJson } from './model-config';
import { quantityEquals, zeroQuantity } from './quantity';
import { redactUri } from './redact';

export type Snapshot = ReadonlyMap<ModelName, ModelSpec>;

/** No models: the state of an empty model directory. */
export const emptySnapshot: Snapshot = new Map();

/**
 * A spec that equals no other, not even an equal one, for models that are half in place at start-up (files without a
 * load, or a load without files): the first diff then emits an Add when the model is listed (the loader completes
 * it) or a Remove when it is not; only this very object carried over is no change to `diff` (`installedInForce`).
 */
export const unknownSpec: ModelSpec = Object.freeze({ storageUri: '' });

/**
 * True when both specs describe the same model ("1Gi" equals "1024Mi"; an unset memory equals "0"; patterns
 * compared as listed, so a changed pattern is a changed model, downloaded again).
 */
export const specEquals = (a: ModelSpec, b: ModelSpec): boolean =>
  a !== unknownSpec &&
  b !== unknownSpec &&
  a.storageUri === b.storageUri &&
  (a.framework ?? '') === (b.framework ?? '') &&
  quantityEquals(a.memory ?? zeroQuantity, b.memory ?? zeroQuantity) &&
  (a.selection === b.selection || selectionKey(a.selection) === selectionKey(b.selection));

/** True when both snapshots list the same names with equal specs. */
export const snapshotEquals = (a: Snapshot, b: Snapshot): boolean => {
  if (a.size !== b.size) return false;
  for (const [name, spec] of a) {
    const other = b.get(name);
    if (other === undefined || !specEquals(spec, other)) return false;
  }
  return true;
};

/**
 * The spec as JSON, keys in a fixed order, memory as written and patterns as listed: the form printed, hashed and
 * stored in markers (KServe's agent ignores the pattern keys it does not know).
 */
export const specToJson = (spec: ModelSpec): ModelSpecJson => ModelSpec.encode(spec);

/**
 * specToJson with the storage URI as it may be shown (redactUri: no user info, query or fragment): for a log line,
 * whose text redaction finds a URL only up to a space, and a query after one showed whole.
 */
export const shownSpecJson = (spec: ModelSpec): ModelSpecJson => ({
  ...specToJson(spec),
  storageUri: redactUri(spec.storageUri),
});

/** A snapshot from name/spec pairs (test fixtures, recovered markers). */
export const snapshotOf = (entries: Iterable<readonly [ModelName, ModelSpec]>): Snapshot => new Map(entries);
