/**
 * What a profiled V2 stand-in reads of its model dir, as a real server would: the dirs (hidden ones too, for
 * Triton's index), an MLServer settings file's name and version, and the fixture's `stand-in.json`, which says
 * what the real server does with that model (the conformance suite checks that the two agree).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V2LoadFailure, V2RepositoryDir } from './v2-profiles';

/**
 * `stand-in.json` in a fixture model's dir: what inference adds to its input (tells v1 from v2), and how a real
 * server fails to load it, if it does.
 */
export interface StandInModel {
  readonly adds?: number;
  readonly fails?: Exclude<V2LoadFailure, 'missing'>;
}

const readJson = async (path: string): Promise<Record<string, unknown> | undefined> => {
  try {
    const value: unknown = JSON.parse(await readFile(path, 'utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
};

/** The dirs of `modelDir` (every one, hidden or not), each with its MLServer settings when it has a file. */
export const repositoryDirs = async (modelDir: string | undefined): Promise<V2RepositoryDir[]> => {
  if (modelDir === undefined) return [];
  const entries = await readdir(modelDir, { withFileTypes: true }).catch(() => []);
  return Promise.all(
    entries
      .filter((entry) => entry.isDirectory())
      .map(async ({ name }): Promise<V2RepositoryDir> => {
        const settings = await readJson(join(modelDir, name, 'model-settings.json'));
        if (settings === undefined) return { name };
        const parameters = settings['parameters'] as Record<string, unknown> | undefined;
        const version = parameters?.['version'];
        return {
          name,
          settings: {
            ...(typeof settings['name'] === 'string' && settings['name'] !== ''
              ? { name: settings['name'] }
              : {}),
            ...(typeof version === 'string' ? { version } : {}),
          },
        };
      }),
  );
};

/** The dir a load of `name` reads: MLServer goes by the settings' name (the file wins), the others by the dir. */
export const dirOfModel = (
  dirs: ReadonlyArray<V2RepositoryDir>,
  name: string,
  bySettingsName: boolean,
): V2RepositoryDir | undefined =>
  bySettingsName
    ? dirs.find(
        (dir) => !dir.name.startsWith('.') && (dir.settings?.name ?? dir.name) === name && dir.settings,
      )
    : dirs.find((dir) => dir.name === name);

/** The fixture's `stand-in.json`; a dir without one loads, and answers inference with its input. */
export const standInModel = async (modelDir: string, dir: string): Promise<StandInModel> => {
  const value = await readJson(join(modelDir, dir, 'stand-in.json'));
  const adds = value?.['adds'];
  const fails = value?.['fails'];
  return {
    ...(typeof adds === 'number' ? { adds } : {}),
    ...(fails === 'config' || fails === 'raised' ? { fails } : {}),
  };
};
