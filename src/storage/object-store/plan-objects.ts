/** planObjects: which objects a bucket prefix names and the path each one takes inside the model dir. */
import path from 'node:path';
import { permanentError, toEffectError } from '../../core/errors';
import { fileFilter, selectedNone, selectsAll, type FileSelection } from '../../core/file-selection';
import { archiveFormatOf } from '../archive/extract';
import { placedPaths } from '../placed-paths';
import type { ObjectLocation, ObjectStoreClient, StoredObject } from './client';
import type { ListingCap } from '../download-limits';
import { listingBounds } from './listing-bounds';

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
): AsyncGenerator<StoredObject> {
  const bounds = listingBounds(`${location.display}: listing under ${JSON.stringify(prefix)}`, cap);
  try {
    for await (const object of client.list({ ...location, prefix }, signal, bounds)) {
      // `dir/` keys are the folders consoles create: no bytes to fetch, and saving one as a file breaks the tree.
      if (!object.key.endsWith('/')) yield object;
    }
  } catch (cause) {
    throw toEffectError(cause);
  }
}

/** Each object with its path in the model dir, checked (see placedPaths): any unsafe or clashing one is `refused`. */
const placed = (
  client: ObjectStoreClient,
  location: ObjectLocation,
  named: ReadonlyArray<{ readonly object: StoredObject; readonly name: string }>,
): ReadonlyArray<PlannedObject> => {
  const noun = nounOf(client);
  const paths = placedPaths(
    named.map(({ object, name }) => ({ name, shown: object.key })),
    noun,
    (key, why) => {
      throw permanentError('refused', `${location.display}: refusing ${noun} ${JSON.stringify(key)}: ${why}`);
    },
  );
  return named.map(({ object }, index) => ({ object, path: paths[index]! }));
};

/**
 * What `location` names, as KServe reads a bucket prefix but without its traps. The prefix is a directory: the
 * objects under `<prefix>/` land at their paths below it (`m1` never takes `m10/...`); when nothing is under it, a
 * prefix that is exactly one object's key names that object, landing as its base name. Keys ending in `/` are
 * skipped; nothing at all is a permanent `not-found`, an unsafe key `refused` (`placed`), a listing out of bounds
 * fails for good (`listingBounds`). With `select`, only the objects whose paths it takes (`selected`). A repo's
 * listing (the Hub's) has the empty prefix, and an empty repo is `not-found`.
 */
export const planObjects = async (
  client: ObjectStoreClient,
  location: ObjectLocation,
  signal: AbortSignal,
  cap: ListingCap,
  select?: FileSelection,
): Promise<ReadonlyArray<PlannedObject>> =>
  selected(client, location, await everyObject(client, location, signal, cap), select);

/**
 * The objects of `plan` whose paths `select` takes, decided from the listing before any byte is fetched. A bucket
 * model that is one archive is kept whole, its entries left to the extraction to select (as an http archive's are); a
 * plan the patterns leave empty is a permanent `not-found` naming them and the count of objects.
 */
const selected = (
  client: ObjectStoreClient,
  location: ObjectLocation,
  plan: ReadonlyArray<PlannedObject>,
  select: FileSelection | undefined,
): ReadonlyArray<PlannedObject> => {
  if (selectsAll(select)) return plan;
  const only = plan.length === 1 ? plan[0]! : undefined;
  if (client.repo === undefined && only !== undefined && archiveFormatOf(only.path) !== undefined)
    return [{ ...only, select: select! }];
  const passes = fileFilter(select);
  const kept = plan.filter((item) => passes(item.path));
  if (kept.length > 0) return kept;
  const objects = `${nounOf(client)}${plan.length === 1 ? '' : 's'}`;
  throw permanentError('not-found', `${location.display}: ${selectedNone(select, plan.length, objects)}`);
};

/** What `location` names, every object of it placed (see planObjects). */
const everyObject = async (
  client: ObjectStoreClient,
  location: ObjectLocation,
  signal: AbortSignal,
  cap: ListingCap,
): Promise<ReadonlyArray<PlannedObject>> => {
  const { prefix } = location;
  const dirPrefix = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  const underDir: Array<{ object: StoredObject; name: string }> = [];
  for await (const object of listed(client, location, dirPrefix, signal, cap)) {
    underDir.push({ object, name: object.key.slice(dirPrefix.length) });
  }
  if (underDir.length > 0) return placed(client, location, underDir);
  if (client.repo !== undefined)
    throw permanentError('not-found', `${location.display}: the repo has no files`);
  if (dirPrefix !== prefix) {
    // Stores list in key order, so the key equal to the prefix comes first: the loop ends at once.
    for await (const object of listed(client, location, prefix, signal, cap)) {
      if (object.key === prefix)
        return placed(client, location, [{ object, name: path.posix.basename(prefix) }]);
    }
  }
  const where =
    prefix === ''
      ? 'at all'
      : dirPrefix === prefix
        ? `under ${JSON.stringify(prefix)}`
        : `named ${JSON.stringify(prefix)} or under ${JSON.stringify(dirPrefix)}`;
  throw permanentError('not-found', `${location.display}: no objects ${where} in bucket ${location.bucket}`);
};
