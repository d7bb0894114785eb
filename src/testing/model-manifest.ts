/** Model manifests for stand-ins: the files a model version must consist of (path → sha256), and a check of a model dir against them. */
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A model version's files: relative path (`/`-separated) → sha256 of the content, in hex. */
export type ModelManifest = ReadonlyMap<string, string>;

/** The manifest of files given as relative path → content. */
export const manifestOf = (files: ReadonlyMap<string, Buffer | string>): ModelManifest =>
  new Map([...files].map(([path, content]) => [path, createHash('sha256').update(content).digest('hex')]));

/** What a model dir held when checked: the version its marker names, and what was wrong, if anything. */
export interface ModelDirCheck {
  /** The `storageUri` in the dir's one `SUCCESS.*` marker, when it has one that parses. */
  readonly version?: string;
  /** Why the dir is not a complete copy of that version; undefined when it is. */
  readonly problem?: string;
}

const markerPrefix = 'SUCCESS.';

/** Every regular file under `dir` but the top-level markers, by relative path; a link or special file is a problem. */
const filesUnder = async (dir: string, prefix = ''): Promise<Map<string, string> | string> => {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = `${prefix}${entry.name}`;
    if (prefix === '' && entry.isFile() && entry.name.startsWith(markerPrefix)) continue;
    if (entry.isDirectory()) {
      const nested = await filesUnder(join(dir, entry.name), `${path}/`);
      if (typeof nested === 'string') return nested;
      for (const [file, hash] of nested) files.set(file, hash);
    } else if (entry.isFile()) {
      files.set(
        path,
        createHash('sha256')
          .update(await readFile(join(dir, entry.name)))
          .digest('hex'),
      );
    } else return `${path} is not a regular file`;
  }
  return files;
};

const versionIn = async (dir: string, markers: string[]): Promise<string | undefined> => {
  if (markers.length !== 1) return undefined;
  try {
    const spec = JSON.parse(await readFile(join(dir, markers[0]!), 'utf8')) as { storageUri?: unknown };
    return typeof spec.storageUri === 'string' ? spec.storageUri : undefined;
  } catch {
    return undefined;
  }
};

/**
 * Checks the model dir `dir` as a model server would find it: a real dir (not a link) with exactly one `SUCCESS.*`
 * marker whose `storageUri` names a version `manifestOf` knows, holding exactly that version's files and content.
 */
export const checkModelDir = async (
  dir: string,
  manifestFor: (version: string) => ModelManifest | undefined,
): Promise<ModelDirCheck> => {
  try {
    if (!(await lstat(dir)).isDirectory()) return { problem: 'the model dir is not a directory' };
    const entries = await readdir(dir, { withFileTypes: true });
    const markers = entries.filter((e) => e.isFile() && e.name.startsWith(markerPrefix)).map((e) => e.name);
    const version = await versionIn(dir, markers);
    if (version === undefined) return { problem: `${markers.length} markers, or one without a storageUri` };
    const expected = manifestFor(version);
    if (expected === undefined) return { version, problem: `no manifest for ${version}` };
    const found = await filesUnder(dir);
    if (typeof found === 'string') return { version, problem: found };
    const missing = [...expected.keys()].filter((path) => !found.has(path));
    const extra = [...found.keys()].filter((path) => !expected.has(path));
    const differing = [...expected].filter(([path, hash]) => found.has(path) && found.get(path) !== hash);
    if (missing.length + extra.length + differing.length === 0) return { version };
    const problem = `missing [${missing.join(', ')}], extra [${extra.join(', ')}], differing [${differing.map(([path]) => path).join(', ')}]`;
    return { version, problem };
  } catch (cause) {
    return { problem: `cannot read the model dir: ${String(cause)}` };
  }
};
