/** The SUCCESS marker of an installed model: its KServe-compatible content and the identity its name hashes. */
import * as E from 'fp-ts/Either';
import { formatValidationErrors } from './decode-config';
import { dirsAbove, parentDir } from './dirs-above';
import { selectsAll } from './file-selection';
import { describeJsonProblem, parseJson } from './json/json';
import { isJsonObject } from './json/json-object';
import { ModelSpec } from './model-config';
import { zeroQuantity } from './quantity';
import { specToJson } from './snapshot';

/** Marker files are `SUCCESS.<hex>`, as in KServe, so either agent can recover the other's model dir. */
export const markerPrefix = 'SUCCESS.';

/** The key of a marker's file manifest; KServe's agent ignores keys it does not know. */
export const manifestKey = 'modelsyncFiles';

/** The regular files of an installed model and their sizes in bytes, by path relative to its dir (`/`-separated). */
export type FileManifest = ReadonlyMap<string, number>;

/** The dirs the manifest's files lie in, each with every dir above it, the top (`''`) among them. */
export const manifestDirs = (files: FileManifest): ReadonlySet<string> =>
  dirsAbove([...files.keys()].map(parentDir));

/** What a marker says: the spec installed and, when modelsync wrote it, the files that must be there. */
export interface MarkerContent {
  readonly spec: ModelSpec;
  /** Absent in a marker of KServe or of modelsync before 0.3: nothing to check the files against. */
  readonly files?: FileManifest;
}

/**
 * A marker's text: the spec as KServe writes it plus the file manifest (when given), so start-up recovery can tell a model whose
 * files were lost or cut short after its marker was written (a power loss before the flush) from a whole one.
 */
export const markerJson = (spec: ModelSpec, files?: FileManifest): string =>
  JSON.stringify(
    files === undefined
      ? specToJson(spec)
      : { ...specToJson(spec), [manifestKey]: Object.fromEntries([...files].sort(byPath)) },
  );

const byPath = ([a]: readonly [string, number], [b]: readonly [string, number]): number =>
  a < b ? -1 : a > b ? 1 : 0;

const isManifestPath = (path: string): boolean =>
  path !== '' &&
  !path.startsWith('/') &&
  !path.includes('\0') &&
  path.split('/').every((part) => part !== '' && part !== '.' && part !== '..');

/** The manifest a marker's JSON holds, absent when it holds none, or why it is no manifest. */
const decodeManifest = (json: unknown): E.Either<string, FileManifest | undefined> => {
  if (!isJsonObject(json) || !(manifestKey in json)) return E.right(undefined);
  const value = json[manifestKey];
  if (!isJsonObject(value)) return E.left(`${manifestKey}: expected an object of file sizes`);
  const files = new Map<string, number>();
  for (const [path, size] of Object.entries(value)) {
    if (!isManifestPath(path)) return E.left(`${manifestKey}: ${JSON.stringify(path)} is no relative path`);
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
      return E.left(`${manifestKey}.${path}: expected a size in bytes`);
    files.set(path, size);
  }
  return E.right(files);
};

/**
 * What a marker name hashes: the spec with an unset framework as `""` and memory as its exact value, so two
 * specs get the same marker exactly when `specEquals` holds ("1Gi" and "1024Mi" share one; see snapshot.ts). The
 * patterns are added only when there are some: a spec without them keeps the name it had before they existed.
 */
export const specIdentityJson = (spec: ModelSpec): string => {
  const identity = [spec.storageUri, spec.framework ?? '', (spec.memory ?? zeroQuantity).value];
  const { selection } = spec;
  return JSON.stringify(
    selectsAll(selection)
      ? identity
      : [...identity, selection?.allowPatterns ?? [], selection?.ignorePatterns ?? []],
  );
};

/** What a marker holds, or why it holds nothing usable (empty, not JSON, not a ModelSpec, a bad manifest). */
export const decodeMarker = (text: string): E.Either<string, MarkerContent> => {
  // A marker is written by us or by KServe in one small write; anything unparseable is treated as corrupt.
  const json = parseJson(text);
  if (E.isLeft(json)) {
    return E.left(
      json.left._tag === 'Blank' ? 'the marker is empty' : `not JSON: ${describeJsonProblem(json.left)}`,
    );
  }
  const spec = ModelSpec.decode(json.right);
  if (E.isLeft(spec)) return E.left(formatValidationErrors(spec.left).join('; '));
  const files = decodeManifest(json.right);
  if (E.isLeft(files)) return files;
  return E.right(files.right === undefined ? { spec: spec.right } : { spec: spec.right, files: files.right });
};

/**
 * Why the files `found` in a model dir are not those its marker lists (`expected`), or undefined when every listed
 * file is there with its size. Files the marker does not list are not looked at: a model server may add its own.
 */
export const manifestMismatch = (expected: FileManifest, found: FileManifest): string | undefined => {
  for (const [path, size] of [...expected].sort(byPath)) {
    const actual = found.get(path);
    if (actual === undefined) return `${path} is missing`;
    if (actual !== size) return `${path} has ${actual} bytes, the marker says ${size}`;
  }
  return undefined;
};
