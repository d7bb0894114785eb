/**
 * A test-only kustomize: renders a kustomization dir with exactly the features deploy/ uses — resources,
 * components, patches (strategic merge and JSON 6902), namespace, images — in kustomize's order. Any other
 * field is an error, so it never renders something real kustomize would render differently without saying so.
 * `npm run check:kustomize` compares it with real kustomize where one is installed (docs/operating.md).
 */
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { applyJsonPatch, isJsonObject, type Json, type JsonObject } from './json-patch';
import { strategicMerge } from './strategic-merge';

/** A Kubernetes object as a manifest holds it. */
export interface KubeObject extends JsonObject {
  apiVersion: string;
  kind: string;
  metadata: JsonObject & { name: string; namespace?: string };
}

interface PatchEntry {
  readonly path?: string;
  readonly patch?: string;
  readonly target?: { readonly kind?: string; readonly name?: string };
}

interface ImageEntry {
  readonly name: string;
  readonly newName?: string;
  readonly newTag?: string;
}

interface Kustomization {
  readonly kind: 'Kustomization' | 'Component';
  readonly resources: ReadonlyArray<string>;
  readonly components: ReadonlyArray<string>;
  readonly patches: ReadonlyArray<PatchEntry>;
  readonly images: ReadonlyArray<ImageEntry>;
  readonly namespace?: string;
}

const supportedFields = ['apiVersion', 'kind', 'resources', 'components', 'patches', 'images', 'namespace'];
const clusterScopedKinds = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
]);

/** Every document of a YAML file or text, as JSON; a syntax error or a duplicate key throws. */
export const parseYamlDocuments = (text: string, source: string): Json[] =>
  parseAllDocuments(text).flatMap((document) => {
    const [error] = document.errors;
    if (error !== undefined) throw new Error(`${source}: ${error.message}`);
    const value = document.toJS() as Json;
    return value === null ? [] : [value];
  });

const only = (entry: object, allowed: ReadonlyArray<string>, where: string): void => {
  const unknown = Object.keys(entry).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) throw new Error(`${where}: unsupported ${unknown.join(', ')}`);
};

const loadKustomization = (dir: string): Kustomization => {
  const file = join(dir, 'kustomization.yaml');
  const [document] = parseYamlDocuments(readFileSync(file, 'utf8'), file);
  if (!isJsonObject(document)) throw new Error(`${file}: not a mapping`);
  only(document, supportedFields, file);
  const list = <T>(field: string): ReadonlyArray<T> => (document[field] ?? []) as unknown as ReadonlyArray<T>;
  const patches = list<PatchEntry>('patches');
  patches.forEach((entry, index) => {
    only(entry, ['path', 'patch', 'target'], `${file}: patches[${index}]`);
    only(entry.target ?? {}, ['kind', 'name'], `${file}: patches[${index}].target`);
  });
  const images = list<ImageEntry>('images');
  images.forEach((entry, index) => only(entry, ['name', 'newName', 'newTag'], `${file}: images[${index}]`));
  return {
    kind: document['kind'] === 'Component' ? 'Component' : 'Kustomization',
    resources: list('resources'),
    components: list('components'),
    patches,
    images,
    ...(typeof document['namespace'] === 'string' ? { namespace: document['namespace'] } : {}),
  };
};

const asObject = (value: Json, source: string): KubeObject => {
  const metadata = isJsonObject(value) ? value['metadata'] : undefined;
  if (
    !isJsonObject(value) ||
    typeof value['apiVersion'] !== 'string' ||
    typeof value['kind'] !== 'string' ||
    !isJsonObject(metadata) ||
    typeof metadata['name'] !== 'string'
  )
    throw new Error(`${source}: every object needs apiVersion, kind and metadata.name`);
  return value as KubeObject;
};

/** The id kustomize keeps unique: kind, namespace, name. */
export const objectId = (object: KubeObject): string =>
  `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;

const targetsOf = (objects: ReadonlyArray<KubeObject>, entry: PatchEntry, patch: Json): KubeObject[] => {
  const wanted = entry.target ?? {
    kind: isJsonObject(patch) ? (patch['kind'] as string) : undefined,
    name:
      isJsonObject(patch) && isJsonObject(patch['metadata'])
        ? (patch['metadata']['name'] as string)
        : undefined,
  };
  if (wanted.kind === undefined && wanted.name === undefined) throw new Error('a patch names no target');
  const found = objects.filter(
    (object) =>
      (wanted.kind === undefined || object.kind === wanted.kind) &&
      (wanted.name === undefined || object.metadata.name === wanted.name),
  );
  if (found.length === 0) throw new Error(`no object matches the patch target ${JSON.stringify(wanted)}`);
  return found;
};

const applyPatch = (objects: KubeObject[], entry: PatchEntry, dir: string): KubeObject[] => {
  const source = entry.path === undefined ? `${dir}: inline patch` : join(dir, entry.path);
  const text = entry.path === undefined ? entry.patch : readFileSync(source, 'utf8');
  // kustomize reads a patch that starts with `[` as JSON only (a YAML flow list there fails to parse).
  if (text?.trimStart().startsWith('[')) JSON.parse(text);
  const [patch] = parseYamlDocuments(text ?? '', source);
  if (patch === undefined) throw new Error(`${source}: an empty patch`);
  if (Array.isArray(patch) && entry.target === undefined)
    throw new Error(`${source}: a JSON patch needs a target`);
  const targets = new Set(targetsOf(objects, entry, patch));
  return objects.map((object) => {
    if (!targets.has(object)) return object;
    try {
      return asObject(
        Array.isArray(patch) ? applyJsonPatch(object, patch) : strategicMerge(object, patch as JsonObject),
        source,
      );
    } catch (error) {
      throw new Error(`${source} on ${objectId(object)}: ${(error as Error).message}`, { cause: error });
    }
  });
};

const setNamespace = (object: KubeObject, namespace: string): KubeObject => {
  if (clusterScopedKinds.has(object.kind))
    throw new Error(`${object.kind} is cluster-scoped: unsupported here`);
  return { ...object, metadata: { ...object.metadata, namespace } };
};

/** `image` with the entry's new name and tag, when its name (without tag or digest) is the entry's. */
const retag = (image: string, entries: ReadonlyArray<ImageEntry>): string => {
  const [, name, suffix] = /^(.*?)((?::[^:/@]+)?(?:@.+)?)$/.exec(image)!;
  const entry = entries.find((candidate) => candidate.name === name);
  if (entry === undefined) return image;
  return `${entry.newName ?? name!}${entry.newTag === undefined ? suffix! : `:${entry.newTag}`}`;
};

const setImages = (value: Json, entries: ReadonlyArray<ImageEntry>, field = ''): Json => {
  if (Array.isArray(value)) return value.map((item) => setImages(item, entries, field));
  if (!isJsonObject(value)) return value;
  const inContainerList = field === 'containers' || field === 'initContainers';
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      inContainerList && key === 'image' && typeof inner === 'string'
        ? retag(inner, entries)
        : setImages(inner, entries, key),
    ]),
  );
};

const addUnique = (objects: KubeObject[], added: ReadonlyArray<KubeObject>): KubeObject[] => {
  const ids = new Set(objects.map(objectId));
  for (const object of added) {
    if (ids.has(objectId(object))) throw new Error(`${objectId(object)} is defined twice`);
    ids.add(objectId(object));
  }
  return [...objects, ...added];
};

/** kustomize's order: resources, then each component over all of them, then patches, namespace, images. */
const build = (
  dir: string,
  expected: Kustomization['kind'],
  input: ReadonlyArray<KubeObject>,
): KubeObject[] => {
  const kustomization = loadKustomization(dir);
  if (kustomization.kind !== expected)
    throw new Error(`${dir}: expected a ${expected}, found a ${kustomization.kind}`);
  let objects = [...input];
  for (const resource of kustomization.resources) {
    const path = resolve(dir, resource);
    objects = addUnique(
      objects,
      statSync(path).isDirectory()
        ? build(path, 'Kustomization', [])
        : parseYamlDocuments(readFileSync(path, 'utf8'), path).map((value) => asObject(value, path)),
    );
  }
  for (const component of kustomization.components)
    objects = build(resolve(dir, component), 'Component', objects);
  for (const entry of kustomization.patches) objects = applyPatch(objects, entry, dir);
  const { namespace } = kustomization;
  if (namespace !== undefined) objects = objects.map((object) => setNamespace(object, namespace));
  return objects.map((object) => setImages(object, kustomization.images) as KubeObject);
};

/** The objects `kubectl kustomize <dir>` prints, in the order they were added (kustomize sorts them by kind). */
export const renderKustomization = (dir: string): KubeObject[] => build(resolve(dir), 'Kustomization', []);
