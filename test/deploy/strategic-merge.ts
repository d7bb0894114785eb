/**
 * Strategic merge patches as kustomize applies them (Kubernetes' apimachinery rules), for the list fields our
 * manifests patch. A list field this does not know the strategy of is an error, never a guess.
 */
import { cloneJson, isJsonObject, type Json, type JsonObject } from './json-patch';

/** The kinds whose lists follow Kubernetes' merge keys; a custom resource's lists are replaced whole. */
const builtInKinds = new Set([
  'Deployment',
  'ConfigMap',
  'Service',
  'Pod',
  'StatefulSet',
  'DaemonSet',
  'Job',
]);

/** List fields replaced whole by a patch (no `patchStrategy: merge` in the Kubernetes API). */
// `sources` (projected volume) and `items` (its configMap and downwardAPI files) are atomic lists too.
const atomicLists = new Set(['args', 'command', 'add', 'drop', 'sources', 'items']);

/** The merge key (`patchMergeKey`) of a list field of a built-in kind, from the field and the path above it. */
const mergeKeyOf = (kind: string, path: ReadonlyArray<string>): string | undefined => {
  const field = path.at(-1)!;
  if (['containers', 'initContainers', 'volumes', 'env', 'imagePullSecrets'].includes(field)) return 'name';
  if (field === 'volumeMounts') return 'mountPath';
  const inContainer = ['containers', 'initContainers'].includes(path.at(-3) ?? '');
  if (field === 'ports' && inContainer) return 'containerPort';
  if (field === 'ports' && kind === 'Service' && path.join('.') === 'spec.ports') return 'port';
  return undefined;
};

/** What a list patch does: `merge` on a key, or `replace` the list. */
const listStrategy = (kind: string, path: ReadonlyArray<string>): { merge: string } | 'replace' => {
  if (!builtInKinds.has(kind) || atomicLists.has(path.at(-1)!)) return 'replace';
  const key = mergeKeyOf(kind, path);
  if (key === undefined) throw new Error(`${path.join('.')}: no strategic merge rule for this list here`);
  return { merge: key };
};

const keyOf = (item: Json, key: string, path: ReadonlyArray<string>): Json => {
  if (!isJsonObject(item) || item[key] === undefined)
    throw new Error(`${path.join('.')}: every item needs its merge key ${key}`);
  return item[key];
};

/**
 * apimachinery's mergeSortedSlice: the patch's items in patch order, the original's other items in their order,
 * interleaved where both are in the original; an item only in the patch goes before an original one.
 */
const interleave = (
  originalOnly: Json[],
  fromPatch: Json[],
  originalKeys: ReadonlyArray<Json>,
  indexKey: (item: Json) => Json,
): Json[] => {
  const result: Json[] = [];
  let [left, right] = [0, 0];
  while (left < originalOnly.length || right < fromPatch.length) {
    if (right >= fromPatch.length) result.push(originalOnly[left++]!);
    else if (left >= originalOnly.length) result.push(fromPatch[right++]!);
    else {
      const leftAt = originalKeys.indexOf(indexKey(originalOnly[left]!));
      const rightAt = originalKeys.indexOf(indexKey(fromPatch[right]!));
      if (leftAt >= 0 && rightAt >= 0 && leftAt < rightAt) result.push(originalOnly[left++]!);
      else result.push(fromPatch[right++]!);
    }
  }
  return result;
};

const mergeList = (original: Json[], patch: Json[], kind: string, path: ReadonlyArray<string>): Json[] => {
  const strategy = listStrategy(kind, path);
  if (strategy === 'replace') return cloneJson(patch);
  const key = strategy.merge;
  const itemKey = (item: Json): Json => keyOf(item, key, path);
  const originalKeys = original.map(itemKey);
  const deleted = new Set<Json>();
  const merged: Json[] = [];
  for (const item of patch) {
    const directive = isJsonObject(item) ? item['$patch'] : undefined;
    if (directive === 'delete') deleted.add(itemKey(item));
    else if (directive !== undefined)
      throw new Error(`${path.join('.')}: unsupported $patch: ${JSON.stringify(directive)}`);
    else {
      if (merged.some((other) => itemKey(other) === itemKey(item)))
        throw new Error(`${path.join('.')}: ${key} ${JSON.stringify(itemKey(item))} twice in the patch`);
      const at = originalKeys.indexOf(itemKey(item));
      merged.push(mergeValue(at >= 0 ? original[at] : undefined, item, kind, [...path, '[]']));
    }
  }
  const patched = new Set([...deleted, ...merged.map(itemKey)]);
  const originalOnly = original.filter((item) => !patched.has(itemKey(item)));
  return interleave(originalOnly, merged, originalKeys, itemKey);
};

const mergeObject = (
  original: JsonObject,
  patch: JsonObject,
  kind: string,
  path: ReadonlyArray<string>,
): JsonObject => {
  const result: JsonObject = { ...original };
  for (const [field, value] of Object.entries(patch)) {
    if (field.startsWith('$')) throw new Error(`${[...path, field].join('.')}: unsupported directive`);
    if (value === null) delete result[field];
    else result[field] = mergeValue(original[field], value, kind, [...path, field]);
  }
  return result;
};

const mergeValue = (
  original: Json | undefined,
  patch: Json,
  kind: string,
  path: ReadonlyArray<string>,
): Json => {
  if (isJsonObject(patch)) return mergeObject(isJsonObject(original) ? original : {}, patch, kind, path);
  if (Array.isArray(patch)) return mergeList(Array.isArray(original) ? original : [], patch, kind, path);
  return patch;
};

/** `target` with `patch` merged in (a copy). The patch's own name and namespace are the target's, as kustomize has it. */
export const strategicMerge = (target: JsonObject, patch: JsonObject): JsonObject => {
  const kind = target['kind'];
  if (typeof kind !== 'string') throw new Error('the patched object has no kind');
  const { metadata, ...rest } = patch;
  const metadataPatch = isJsonObject(metadata) ? { ...metadata } : {};
  delete metadataPatch['name'];
  delete metadataPatch['namespace'];
  return mergeObject(cloneJson(target), { ...rest, metadata: metadataPatch }, kind, []);
};
