/** planHubFiles: which files of a Hub tree are fetched and where each lands in the model dir — decided before any byte is fetched. */
import { permanentError, type EffectError } from '../../core/errors';
import { fileFilter, selectedNone, type FileSelection } from '../../core/file-selection';
import { placedPaths } from '../placed-paths';
import type { HubFile } from './hub-api';
import type { ContentDigest } from '../listed-content';

/**
 * A file to fetch: its path in the repo (for its URL), where it lands (checked, `/`-separated), its size and the
 * digest its bytes must have, when the tree gave one.
 */
export interface PlannedHubFile {
  readonly path: string;
  readonly to: string;
  readonly size: number;
  readonly digest?: ContentDigest | undefined;
}

const refusal = (what: string, path: string, why: string): EffectError =>
  permanentError('refused', `${what}: refusing file ${JSON.stringify(path.slice(0, 300))}: ${why}`);

/**
 * The files of `files` that `select` selects (fnmatch patterns on the repo path, as snapshot_download's
 * `filter_repo_objects`), each with the path it takes in the model dir. Every listed path goes through the
 * archive guard's check first, selected or not: a tree naming a path that could leave the model dir (`..`, an
 * absolute path, `\` used to the same effect, NUL, names the file system cannot take), two files for one path or a
 * file where another needs a directory is not a tree the Hub sends, and is `refused` (permanent) whole. A
 * selection that leaves nothing, or an empty repo, is a permanent `not-found`: an empty model dir serves nothing.
 */
export const planHubFiles = (
  what: string,
  files: ReadonlyArray<HubFile>,
  select: FileSelection | undefined,
): ReadonlyArray<PlannedHubFile> => {
  const paths = placedPaths(
    files.map((file) => ({ name: file.path, shown: file.path })),
    'file',
    (path, why) => {
      throw refusal(what, path, why);
    },
  );
  const placed = files.map((file, index) => ({
    path: file.path,
    to: paths[index]!,
    size: file.size,
    digest: file.digest,
  }));
  const selected = fileFilter(select);
  const plan = placed.filter((file) => selected(file.path));
  if (plan.length === 0) {
    throw permanentError(
      'not-found',
      placed.length === 0
        ? `${what}: the repo has no files`
        : `${what}: ${selectedNone(select, placed.length, 'files')}`,
    );
  }
  return plan;
};
