/** planObjects: which objects a bucket prefix names and the path each one takes inside the model dir. */
import path from 'node:path';
import { permanentError, toEffectError } from '../../core/errors';
import { fileFilter, selectedNone, selectsAll, type FileSelection } from '../../core/file-selection';
import { archiveFormatOf } from '../archive/extract';
import { entryPathOf, quotedName } from '../archive/guard';
import type { ObjectLocation, ObjectStoreClient, StoredObject } from './client';
import type { ListingCap } from '../download-limits';
import { invalidListing, listingBounds } from './listing-bounds';
import type { StorePressure } from '../store-pressure';

/** One object to download and its path relative to the model dir (`/`-separated, checked). */
export interface PlannedObject {
  readonly object: StoredObject;
  readonly path: string;
  /** For a model that is this one archive: the selection its entries are to pass when it is extracted. */
  readonly select?: FileSelection;
}

/** What the listing of `client` names: a repo's files or a bucket's objects. */
const nounOf = (client: ObjectStoreClient): string => (client.repo === undefined ? 'object' : 'file');

/** The objects of `location` (the listing with `prefix` in place of its own), folder markers left out. */
async function* listed(
  client: ObjectStoreClient,
  location: ObjectLocation,
  prefix: string,
  signal: AbortSignal,
  cap: ListingCap,
  pressure: StorePressure | undefined,
): AsyncGenerator<StoredObject> {
  const what = `${location.display}: listing under ${JSON.stringify(prefix)}`;
  const bounds = listingBounds(what, cap, pressure === undefined ? undefined : { pressure, signal });
  try {
    for await (const object of client.list({ ...location, prefix }, signal, bounds)) {
      // Each path is the key past the prefix: a key elsewhere (a broken or hostile store) would land cut, as
      // another file (`zz/evil.bin` as `evil.bin`, `m10x.bin` as `x.bin`).
      if (!object.key.startsWith(prefix))
        throw invalidListing(what, `it names ${quotedName(object.key)}, which is not under the prefix`);
      // `dir/` keys are the folders consoles create: no bytes to fetch, and saving one as a file breaks the tree.
      if (!object.key.endsWith('/')) yield object;
    }
  } catch (cause) {
    throw toEffectError(cause);
  }
}

/**
 * The paths placed so far as a tree of their parts: each path is walked down part by part, never built and hashed
 * again for every dir above it (a store's keys may be 4 KiB: 2,000 objects 400 dirs deep took 2.9 s, quadratic in
 * the depth, with the event loop held).
 */
interface PathNode {
  readonly children: Map<string, PathNode>;
  /** The key placed at this path as a file. */
  file?: string;
  /** The last key placed below this path, which takes it as a dir. */
  dirOf?: string;
}

const newPathNode = (): PathNode => ({ children: new Map() });

const childOf = (node: PathNode, part: string): PathNode => {
  let child = node.children.get(part);
  if (child === undefined) node.children.set(part, (child = newPathNode()));
  return child;
};

/** A name's parts as entryPathOf reads them (`/` and `\\` separate, empty and `.` parts dropped). */
const partsOf = (name: string): string[] =>
  name.split(/[/\\]+/).filter((part) => part !== '' && part !== '.');

/**
 * `named` without the empty objects another one needs as its directory: `a` of 0 bytes beside `a/b` is the folder
 * `a/` as s3fs and Hadoop's tools mark one, without the trailing `/` (KServe's initializer skips every empty object).
 */
const withoutFolderMarkers = <T extends { readonly object: StoredObject; readonly name: string }>(
  named: ReadonlyArray<T>,
): ReadonlyArray<T> => {
  if (!named.some(({ object }) => object.size === 0)) return named;
  const tree = newPathNode();
  for (const { name } of named) {
    let node = tree;
    for (const part of partsOf(name)) node = childOf(node, part);
  }
  // A dir another object needs has children in the tree: found in one walk down its parts.
  const isDir = (name: string): boolean => {
    let node: PathNode | undefined = tree;
    for (const part of partsOf(name)) node = node?.children.get(part);
    return node !== undefined && node !== tree && node.children.size > 0;
  };
  return named.filter(({ object, name }) => object.size !== 0 || !isDir(name));
};

/**
 * Each object with its path in the model dir (`/`-separated), every name passing entryPathOf, before any byte is
 * fetched: an unsafe one, two for one path, or one with bytes a path another takes as a dir (`a` and `a/b`) is
 * `refused` (an empty one is a folder marker, left out).
 */
const placed = (
  client: ObjectStoreClient,
  location: ObjectLocation,
  everyNamed: ReadonlyArray<{ readonly object: StoredObject; readonly name: string }>,
): ReadonlyArray<PlannedObject> => {
  const noun = nounOf(client);
  const named = withoutFolderMarkers(everyNamed);
  // The key that took each path, as a file and as a dir.
  const tree = newPathNode();
  return named.map(({ object, name }) => {
    const refuse = (why: string): never => {
      throw permanentError(
        'refused',
        `${location.display}: refusing ${noun} ${quotedName(object.key)}: ${why}`,
      );
    };
    const to = entryPathOf(name, refuse);
    if (to === '') refuse('it names the model dir itself');
    const parts = to.split('/');
    let found: PathNode | undefined = tree;
    for (const part of parts) found = found?.children.get(part);
    const other = found?.file ?? found?.dirOf;
    if (other !== undefined) refuse(`${quotedName(other)} needs the same path, ${to}`);
    let node = tree;
    for (let i = 0; i < parts.length - 1; i++) {
      node = childOf(node, parts[i]!);
      if (node.file !== undefined)
        refuse(
          `it would be saved under ${parts.slice(0, i + 1).join('/')}, which is the ${noun} ${quotedName(node.file)}`,
        );
      node.dirOf = object.key;
    }
    childOf(node, parts[parts.length - 1]!).file = object.key;
    return { object, path: to };
  });
};

/** The one archive a bucket model is, if it is one: saved and extracted whole (a repo's lone archive is a file). */
export const loneArchive = (
  client: ObjectStoreClient,
  plan: ReadonlyArray<PlannedObject>,
): PlannedObject | undefined => {
  const only = plan.length === 1 ? plan[0]! : undefined;
  return client.repo === undefined && only !== undefined && archiveFormatOf(only.path) !== undefined
    ? only
    : undefined;
};

/**
 * What `location` names, as KServe reads a bucket prefix but without its traps (the rules: docs/storage.md, "Object
 * stores"), placed and checked. With `select`, only the objects whose paths it takes, but a lone archive whole, its
 * entries the extraction's to select (as an http archive's); none taken: a permanent `not-found` naming the patterns.
 * Each list page is asked through `pressure`, the store's, when given (ListingBounds.ask).
 */
export const planObjects = async (
  client: ObjectStoreClient,
  location: ObjectLocation,
  signal: AbortSignal,
  cap: ListingCap,
  select?: FileSelection,
  pressure?: StorePressure,
): Promise<ReadonlyArray<PlannedObject>> => {
  const plan = await everyObject(client, location, signal, cap, select, pressure);
  if (selectsAll(select)) return plan;
  const archive = loneArchive(client, plan);
  if (archive !== undefined) return [{ ...archive, select: select! }];
  const passes = fileFilter(select);
  const kept = plan.filter((item) => passes(item.path));
  if (kept.length > 0) return kept;
  const objects = `${nounOf(client)}${plan.length === 1 ? '' : 's'}`;
  throw permanentError('not-found', `${location.display}: ${selectedNone(select, plan.length, objects)}`);
};

/** What `location` names, every object of it placed (see planObjects). */
const everyObject = async (
  ...[client, location, signal, cap, , pressure]: Parameters<typeof planObjects>
): Promise<ReadonlyArray<PlannedObject>> => {
  const { prefix } = location;
  const dirPrefix = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  const underDir: Array<{ object: StoredObject; name: string }> = [];
  for await (const object of listed(client, location, dirPrefix, signal, cap, pressure)) {
    underDir.push({ object, name: object.key.slice(dirPrefix.length) });
  }
  if (underDir.length > 0) return placed(client, location, underDir);
  if (client.repo !== undefined)
    throw permanentError('not-found', `${location.display}: the repo has no files`);
  if (dirPrefix !== prefix) {
    // Stores list in key order, so the key equal to the prefix comes first: the loop ends at once.
    for await (const object of listed(client, location, prefix, signal, cap, pressure)) {
      if (object.key === prefix)
        return placed(client, location, [{ object, name: path.posix.basename(prefix) }]);
    }
  }
  const where =
    prefix === ''
      ? 'at all'
      : dirPrefix === prefix
        ? `under ${quotedName(prefix)}`
        : `named ${quotedName(prefix)} or under ${quotedName(dirPrefix)}`;
  throw permanentError('not-found', `${location.display}: no objects ${where} in bucket ${location.bucket}`);
};
