/** modelDirRecovery: what start-up finds in the model dir — each model's spec from its marker, checked against its files; the rest cleaned up. */
import { readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { manifestMismatch, type FileManifest } from '../core/marker';
import type { ModelSpec } from '../core/model-config';
import { modelNameProblem, type ModelName } from '../core/model-name';
import { shownSpecJson } from '../core/snapshot';
import type { ModelStore } from '../ports';
import { forEachLimited, listedFileSizes, step, withDir } from '../fs';
import type { Logger } from '../log';
import { keepMarkerPrivate } from './marker-file';
import { isTemporary, type ModelDirRoot } from './model-dir-root';
const recoverConcurrency = 8;

const deleteModelDir = (m: ModelDirRoot, dir: string, name: string): Promise<void> =>
  m.discard(dir, name).catch((err: unknown) => {
    m.log.error({ err, model: name, dir }, 'cannot delete a model dir; leaving it');
  });

/**
 * Why the files under `dir` are not those `files` lists, or undefined when they are (or cannot be read). Only the
 * listed files are looked up: what the model server added (any number of files, dirs nested at will) costs nothing.
 */
const filesMismatch = async (log: Logger, dir: string, files: FileManifest): Promise<string | undefined> => {
  try {
    return manifestMismatch(files, await withDir(dir, (held) => listedFileSizes(held, files.keys())));
  } catch (err) {
    log.warn({ err, dir }, 'cannot check a model dir against its marker; keeping it');
    return undefined;
  }
};

/**
 * What keepMarkerPrivate did over one recovery: the markers it made 0600 and those it could not (a read-only volume,
 * a marker of another user), each told once in all, however many models (an upgrade over 10,000 models is 10,000).
 */
interface MarkerModes {
  made: number;
  failed: number;
  firstFailure?: { readonly err: unknown; readonly file: string };
}

/**
 * keepMarkerPrivate on the marker `file` of `name` in `dir`, counted into `modes`: the model is kept either way. The
 * marker is opened from `dir` held by handle: a dir the model server swapped for a link since it was read is not
 * followed (the chmod would land on a file of that name wherever the link leads).
 */
const keepPrivate = (
  log: Logger,
  name: ModelName,
  dir: string,
  file: string,
  modes: MarkerModes,
): Promise<void> =>
  withDir(dir, (held) => keepMarkerPrivate(`${held.ref}/${basename(file)}`)).then(
    (changed) => {
      if (!changed) return;
      modes.made++;
      log.debug({ model: name, file }, "marker made readable by modelsync's user alone");
    },
    (err: unknown) => {
      modes.failed++;
      modes.firstFailure ??= { err, file };
      log.debug({ err, model: name, file }, "cannot make the marker readable by modelsync's user alone");
    },
  );

/** The one line each of what keepPrivate did over a recovery. */
const logMarkerModes = (log: Logger, root: string, modes: MarkerModes): void => {
  if (modes.made > 0)
    log.info(
      { dir: root, markers: modes.made },
      "markers readable by all (an older modelsync's, or KServe's) made readable by modelsync's user alone",
    );
  if (modes.failed > 0)
    log.warn(
      { dir: root, markers: modes.failed, ...modes.firstFailure },
      "cannot make markers readable by modelsync's user alone: their storage URIs stay readable by the model server",
    );
};

/** The spec installed in `M/<name>`, or undefined after removing whatever there holds no usable model. */
const recoverModel = async (
  m: ModelDirRoot,
  name: ModelName,
  modes: MarkerModes,
): Promise<ModelSpec | undefined> => {
  const { log } = m;
  const dir = join(m.root, name);
  const found = await m.inspect(dir).catch((err: unknown) => {
    log.error({ err, model: name, dir }, 'cannot read a model dir; leaving it');
    return undefined;
  });
  if (found === undefined || found._tag === 'Missing') return undefined;
  if (found._tag === 'NotADir') {
    await m
      .removeNonDir(found)
      .catch((err: unknown) => log.error({ err, model: name, dir }, 'cannot remove it; leaving it'));
    return undefined;
  }
  const { state } = found;
  if (state._tag === 'Valid') {
    const mismatch = state.files === undefined ? undefined : await filesMismatch(log, dir, state.files);
    if (mismatch === undefined) {
      if (state.othersMayRead) await keepPrivate(log, name, dir, state.file, modes);
      log.info({ model: name, spec: shownSpecJson(state.spec) }, 'model recovered');
      return state.spec;
    }
    log.warn(
      { model: name, dir, mismatch },
      'model files do not match their marker (cut short by a crash before they were flushed); deleting the model dir',
    );
    await deleteModelDir(m, dir, name);
    return undefined;
  }
  if (found.foreign !== undefined) {
    log.info({ model: name, dir, found: found.foreign }, 'not a model dir modelsync owns; leaving it');
    return undefined;
  }
  if (state._tag === 'Unreadable') {
    log.warn(
      { model: name, dir, file: state.file, reason: state.reason },
      "cannot read the model marker (not permitted: another user's?); leaving the model dir",
    );
    return undefined;
  }
  switch (state._tag) {
    case 'NoMarker':
      log.info({ model: name, dir }, 'model dir without a marker (interrupted download); deleting it');
      break;
    case 'Ambiguous':
      log.warn(
        { model: name, dir, files: state.files, markers: state.count },
        'model dir with several markers; deleting it',
      );
      break;
    case 'Corrupt':
      log.warn(
        { model: name, file: state.file, reason: state.reason },
        'corrupt model marker; deleting the model dir',
      );
      break;
  }
  await deleteModelDir(m, dir, name);
  return undefined;
};

const recoverEntry = async (
  m: ModelDirRoot,
  entry: string,
  snapshot: Map<ModelName, ModelSpec>,
  modes: MarkerModes,
): Promise<void> => {
  const { log } = m;
  const path = join(m.root, entry);
  if (isTemporary(entry)) {
    log.info({ dir: path }, 'leftover temporary dir; deleting it');
    await m.discardQuietly(path);
  } else if (entry.startsWith('.')) {
    log.debug({ path }, 'not a model dir; leaving it');
  } else if (modelNameProblem(entry) !== undefined) {
    log.warn({ dir: path, problem: modelNameProblem(entry) }, 'dir name is not a model name; leaving it');
  } else {
    const spec = await recoverModel(m, entry as ModelName, modes);
    if (spec !== undefined) snapshot.set(entry as ModelName, spec);
  }
};

/** `ModelStore.recover` of the model dir `m`: see ports.ts for the contract. */
export const modelDirRecovery = (m: ModelDirRoot): ModelStore['recover'] => {
  const { root, log } = m;
  return async () => {
    await m.makeRoot();
    const entries = await step(`cannot list ${root}`, () => readdir(root));
    const snapshot = new Map<ModelName, ModelSpec>();
    const modes: MarkerModes = { made: 0, failed: 0 };
    await forEachLimited(entries, recoverConcurrency, (entry) => recoverEntry(m, entry, snapshot, modes));
    logMarkerModes(log, root, modes);
    log.info({ dir: root, models: snapshot.size }, 'model dir recovered');
    // Sorted, so the snapshot (and the ops derived from it) do not depend on readdir or completion order.
    return new Map([...snapshot].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  };
};
