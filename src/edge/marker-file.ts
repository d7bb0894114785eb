/** marker-file: the SUCCESS marker of a model dir on disk — written last into a staged dir, read back at recovery. */
import { createHash } from 'node:crypto';
import { lstat, open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isLeft } from 'fp-ts/Either';
import { errorMessage } from '../core/errors';
import { canonicalSpecJson, decodeMarker, markerPrefix, specIdentityJson } from '../core/marker';
import type { ModelSpec } from '../core/model-config';
import { step } from './durable-fs';

const maxMarkerBytes = 64 * 1024;

const markerName = (spec: ModelSpec): string =>
  markerPrefix + createHash('sha256').update(specIdentityJson(spec)).digest('hex');

/** Writes and flushes the marker of `spec` into `dir`; it must not exist yet. */
export const writeMarker = (dir: string, spec: ModelSpec): Promise<void> => {
  const file = join(dir, markerName(spec));
  return step(`cannot write the marker ${file}`, async () => {
    const handle = await open(file, 'wx', 0o644);
    try {
      await handle.writeFile(canonicalSpecJson(spec));
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
};

/** A model dir as found on disk. */
export type DirState =
  | { readonly _tag: 'Valid'; readonly file: string; readonly spec: ModelSpec }
  | { readonly _tag: 'NoMarker' }
  | { readonly _tag: 'Ambiguous'; readonly files: ReadonlyArray<string> }
  | { readonly _tag: 'Corrupt'; readonly file: string; readonly reason: string };

const readMarker = async (file: string): Promise<DirState> => {
  try {
    const { size } = await lstat(file);
    if (size > maxMarkerBytes) {
      return { _tag: 'Corrupt', file, reason: `larger than ${maxMarkerBytes} bytes` };
    }
    const spec = decodeMarker(await readFile(file, 'utf8'));
    return isLeft(spec)
      ? { _tag: 'Corrupt', file, reason: spec.left }
      : { _tag: 'Valid', file, spec: spec.right };
  } catch (cause) {
    return { _tag: 'Corrupt', file, reason: errorMessage(cause) };
  }
};

/**
 * What the markers directly inside `dir` say; throws the fs error when `dir` cannot be listed. Nested markers do
 * not count (KServe attributed them to the nested dir's name).
 */
export const readDirState = async (dir: string): Promise<DirState> => {
  const entries = await readdir(dir, { withFileTypes: true });
  const markers = entries
    .filter((entry) => entry.isFile() && entry.name.startsWith(markerPrefix))
    .map((entry) => join(dir, entry.name))
    .sort();
  if (markers.length === 0) return { _tag: 'NoMarker' };
  if (markers.length > 1) return { _tag: 'Ambiguous', files: markers };
  return readMarker(markers[0]!);
};
