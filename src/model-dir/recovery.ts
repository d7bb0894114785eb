/** modelDirRecovery: what start-up finds in the model dir — each model's spec from its marker, checked against its files; the rest cleaned up. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestMismatch, type FileManifest } from '../core/marker';
import type { ModelSpec } from '../core/model-config';
import { modelNameProblem, type ModelName } from '../core/model-name';
import { specToJson } from '../core/snapshot';
import type { ModelStore } from '../ports';
import { forEachLimited, step, fileSizes, withDir } from '../fs';
import type { Logger } from '../log';
import type { Found } from './entry';
const recoverConcurrency = 8;

/** What recovery does through the store (model-dir.ts): look at an entry, delete one, tell temporary dirs. */
export interface RecoveryDeps {
  readonly root: string;
  readonly log: Logger;
  /** Creates the model dir if it is missing (KServe's agent panicked on a missing one). */
  readonly makeRoot: () => Promise<void>;
  readonly inspect: (path: string) => Promise<Found>;
  /** Moves `path` aside, then deletes it. */
  readonly discard: (path: string, name: string) => Promise<void>;
  /** Deletes `path`, logging (not throwing) a failure. */
  readonly discardQuietly: (path: string) => Promise<void>;
  readonly removeNonDir: (found: Found & { _tag: 'NotADir' }) => Promise<void>;
  /** True for the store's staging and move-aside dirs. */
  readonly isTemporary: (entry: string) => boolean;
}

/** `ModelStore.recover` of the model dir `root`: see ports.ts for the contract. */
export const modelDirRecovery = ({
  root,
  log,
  makeRoot,
  inspect,
  discard,
  discardQuietly,
  removeNonDir,
  isTemporary,
}: RecoveryDeps): ModelStore['recover'] => {
  const deleteModelDir = async (dir: string, name: string): Promise<void> => {
    try {
      await discard(dir, name);
    } catch (err) {
      log.error({ err, model: name, dir }, 'cannot delete a model dir; leaving it');
    }
  };

  /** Why the files under `dir` are not those `files` lists, or undefined when they are (or cannot be read). */
  const filesMismatch = async (dir: string, files: FileManifest): Promise<string | undefined> => {
    try {
      return manifestMismatch(files, await withDir(dir, fileSizes));
    } catch (err) {
      log.warn({ err, dir }, 'cannot check a model dir against its marker; keeping it');
      return undefined;
    }
  };

  /** The spec installed in `M/<name>`, or undefined after removing whatever there holds no usable model. */
  const recoverModel = async (name: ModelName): Promise<ModelSpec | undefined> => {
    const dir = join(root, name);
    let found: Found;
    try {
      found = await inspect(dir);
    } catch (err) {
      log.error({ err, model: name, dir }, 'cannot read a model dir; leaving it');
      return undefined;
    }
    if (found._tag === 'Missing') return undefined;
    if (found._tag === 'NotADir') {
      await removeNonDir(found).catch((err: unknown) =>
        log.error({ err, model: name, dir }, 'cannot remove it; leaving it'),
      );
      return undefined;
    }
    const { state } = found;
    if (state._tag === 'Valid') {
      const mismatch = state.files === undefined ? undefined : await filesMismatch(dir, state.files);
      if (mismatch === undefined) {
        log.info({ model: name, spec: specToJson(state.spec) }, 'model recovered');
        return state.spec;
      }
      log.warn(
        { model: name, dir, mismatch },
        'model files do not match their marker (cut short by a crash before they were flushed); deleting the model dir',
      );
      await deleteModelDir(dir, name);
      return undefined;
    }
    if (found.foreign !== undefined) {
      log.info({ model: name, dir, found: found.foreign }, 'not a model dir modelsync owns; leaving it');
      return undefined;
    }
    switch (state._tag) {
      case 'NoMarker':
        log.info({ model: name, dir }, 'model dir without a marker (interrupted download); deleting it');
        break;
      case 'Ambiguous':
        log.warn({ model: name, dir, files: state.files }, 'model dir with several markers; deleting it');
        break;
      case 'Corrupt':
        log.warn(
          { model: name, file: state.file, reason: state.reason },
          'corrupt model marker; deleting the model dir',
        );
        break;
    }
    await deleteModelDir(dir, name);
    return undefined;
  };

  const recoverEntry = async (entry: string, snapshot: Map<ModelName, ModelSpec>): Promise<void> => {
    const path = join(root, entry);
    if (isTemporary(entry)) {
      log.info({ dir: path }, 'leftover temporary dir; deleting it');
      await discardQuietly(path);
    } else if (entry.startsWith('.')) {
      log.debug({ path }, 'not a model dir; leaving it');
    } else if (modelNameProblem(entry) !== undefined) {
      log.warn({ dir: path, problem: modelNameProblem(entry) }, 'dir name is not a model name; leaving it');
    } else {
      const spec = await recoverModel(entry as ModelName);
      if (spec !== undefined) snapshot.set(entry as ModelName, spec);
    }
  };

  return async () => {
    await makeRoot();
    const entries = await step(`cannot list ${root}`, () => readdir(root));
    const snapshot = new Map<ModelName, ModelSpec>();
    await forEachLimited(entries, recoverConcurrency, (entry) => recoverEntry(entry, snapshot));
    log.info({ dir: root, models: snapshot.size }, 'model dir recovered');
    // Sorted, so the snapshot (and the ops derived from it) do not depend on readdir or completion order.
    return new Map([...snapshot].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  };
};
