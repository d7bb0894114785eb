/** The SUCCESS marker of an installed model: its KServe-compatible content and the identity its name hashes. */
import { either as E } from 'fp-ts';
import { formatValidationErrors } from './decode-config';
import { describeJsonProblem, parseJson } from './json';
import { ModelSpec } from './model-config';
import { zeroQuantity } from './quantity';
import { specToJson } from './snapshot';

/** Marker files are `SUCCESS.<hex>`, as in KServe, so either agent can recover the other's model dir. */
export const markerPrefix = 'SUCCESS.';

/** The spec as stored in a marker: KServe's JSON (keys storageUri, framework, memory; memory as written). */
export const canonicalSpecJson = (spec: ModelSpec): string => JSON.stringify(specToJson(spec));

/**
 * What a marker name hashes: the spec with an unset framework as `""` and memory as its exact value, so two
 * specs get the same marker exactly when `specEquals` holds ("1Gi" and "1024Mi" share one; see snapshot.ts).
 */
export const specIdentityJson = (spec: ModelSpec): string =>
  JSON.stringify([spec.storageUri, spec.framework ?? '', (spec.memory ?? zeroQuantity).value]);

/** The spec a marker holds, or why it holds none (empty, not JSON, not a ModelSpec). */
export const decodeMarker = (text: string): E.Either<string, ModelSpec> => {
  // A marker is written by us or by KServe in one small write; anything unparseable is treated as corrupt.
  const json = parseJson(text);
  if (E.isLeft(json)) {
    return E.left(
      json.left._tag === 'Blank' ? 'the marker is empty' : `not JSON: ${describeJsonProblem(json.left)}`,
    );
  }
  const spec = ModelSpec.decode(json.right);
  return E.isLeft(spec) ? E.left(formatValidationErrors(spec.left).join('; ')) : spec;
};
