/** unservedModels: the models of a snapshot whose storage URI has a scheme no storage provider serves. */
import { isRight } from 'fp-ts/Either';
import type { ModelName } from './model-name';
import type { Snapshot } from './snapshot';
import { parseStorageUri, redactUri } from './storage-uri';

/** A model no provider can download: its name, its storage URI (redacted) and the scheme nobody serves. */
export interface UnservedModel {
  readonly model: ModelName;
  readonly storageUri: string;
  readonly scheme: string;
}

/**
 * The models of `next` whose storage URI's scheme is not in `schemes`, leaving out those whose URI is the same as in
 * `previous` (they were reported then). A URI without a scheme is not one of them: its model fails as `invalid-uri`.
 */
export const unservedModels = (
  previous: Snapshot,
  next: Snapshot,
  schemes: ReadonlyArray<string>,
): ReadonlyArray<UnservedModel> => {
  const served = new Set(schemes);
  const unserved: UnservedModel[] = [];
  // forEach, not for-of over entries: no entry array per model at each change.
  next.forEach((spec, model) => {
    if (previous.get(model)?.storageUri === spec.storageUri) return;
    const parsed = parseStorageUri(spec.storageUri);
    if (isRight(parsed) && !served.has(parsed.right.scheme)) {
      unserved.push({ model, storageUri: redactUri(spec.storageUri), scheme: parsed.right.scheme });
    }
  });
  return unserved;
};
