/** modelDirStore: the model directory M, filled through staging dirs and renames so no one sees half a model. */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { permanentError } from '../core/errors';
import type { ModelSpec } from '../core/model-config';
import { modelNameProblem, type ModelName } from '../core/model-name';
import { specToJson } from '../core/snapshot';
import type { Installed, ModelStore } from '../ports';
import { forEachLimited, fsError, isMissing, step, syncPath, syncTree } from './durable-fs';
import type { Logger } from './logger';
import { readDirState, writeMarker, type DirState } from './marker-file';

/** Where the store lives and where it logs. */
export interface ModelDirOptions {
  readonly root: string;
  readonly log: Logger;
}

// Reserved prefixes: model names cannot start with '.', so these never collide with a model dir.
const stagingPrefix = '.tmp-';
const asidePrefix = '.old-';
const lostAndFound = 'lost+found';
const recoverConcurrency = 8;
// The model server usually runs as another user; mkdtemp creates 0700.
const modelDirMode = 0o755;

/** A short readable form of the name for temporary dir names, well inside NAME_MAX even for 255-byte names. */
const nameTag = (name: string): string => Array.from(name).slice(0, 48).join('');

const randomSuffix = (): string => randomBytes(6).toString('hex');

/** The local model directory `M` as a ModelStore; see ports.ts for the contract. */
export const modelDirStore = (options: ModelDirOptions): ModelStore => {
  const root = resolve(options.root);
  const log = options.log.child({ component: 'model-dir' });

  // Defence in depth: ModelName already refuses these, but a bad name here could delete outside M.
  const modelDir = (name: string): string => {
    const dir = join(root, name);
    const problem = modelNameProblem(name);
    if (problem !== undefined || dirname(dir) !== root || basename(dir) !== name) {
      throw permanentError(
        'refused',
        `refusing model dir for ${JSON.stringify(name)}: ${problem ?? 'outside the model dir'}`,
      );
    }
    return dir;
  };

  /** Renames `path` to a fresh `.old-` sibling; undefined when there is nothing to move. */
  const moveAside = async (path: string, name: string): Promise<string | undefined> => {
    const aside = join(root, `${asidePrefix}${nameTag(name)}-${randomSuffix()}`);
    try {
      await rename(path, aside);
      return aside;
    } catch (cause) {
      if (isMissing(cause)) return undefined;
      throw fsError(`cannot move ${path} aside`, cause);
    }
  };

  // Rename first, then delete: a crash mid-delete must not leave a marker next to half the files.
  const discard = async (path: string, name: string): Promise<void> => {
    const aside = await moveAside(path, name);
    if (aside !== undefined) {
      await step(`cannot delete ${aside}`, () => rm(aside, { recursive: true, force: true }));
    }
  };

  const discardQuietly = async (path: string): Promise<void> => {
    try {
      await rm(path, { recursive: true, force: true });
    } catch (err) {
      log.warn({ err, dir: path }, 'cannot delete a staging dir; recovery will');
    }
  };

  const syncRootQuietly = async (): Promise<void> => {
    try {
      await syncPath(root);
    } catch (err) {
      // The rename is done and visible; a lost rename after a crash is repaired by recover() and a re-download.
      log.warn({ err, dir: root }, 'cannot flush the model dir');
    }
  };

  const fillStaging = async (
    staging: string,
    spec: ModelSpec,
    fill: (dir: string, signal: AbortSignal) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> => {
    try {
      await fill(staging, signal);
    } catch (cause) {
      throw signal.aborted ? cause : fsError(`cannot write the model into ${staging}`, cause);
    }
    signal.throwIfAborted();
    await syncTree(staging);
    signal.throwIfAborted();
    await writeMarker(staging, spec);
    await step(`cannot chmod ${staging}`, () => chmod(staging, modelDirMode));
    await syncPath(staging);
  };

  const restore = async (replaced: string, target: string): Promise<void> => {
    try {
      await rename(replaced, target);
    } catch (err) {
      log.error({ err, dir: replaced }, 'cannot move the replaced model dir back; recovery will delete it');
    }
  };

  /** Swaps the staged dir in; the old version stays aside (and loaded files stay readable) until dropped. */
  const commit = async (
    staging: string,
    target: string,
    name: string,
    signal: AbortSignal,
  ): Promise<Installed> => {
    signal.throwIfAborted();
    const replaced = await moveAside(target, name);
    try {
      await rename(staging, target);
    } catch (cause) {
      if (replaced !== undefined) await restore(replaced, target);
      throw fsError(`cannot rename ${staging} to ${target}`, cause);
    }
    await syncRootQuietly();
    return {
      dropReplaced: async () => {
        if (replaced !== undefined) {
          await step(`cannot delete ${replaced}`, () => rm(replaced, { recursive: true, force: true }));
        }
      },
    };
  };

  const install: ModelStore['install'] = async (name, spec, fill, signal) => {
    const target = modelDir(name);
    signal.throwIfAborted();
    await step(`cannot create ${root}`, () => mkdir(root, { recursive: true }));
    const staging = await step(`cannot create a staging dir in ${root}`, () =>
      mkdtemp(join(root, `${stagingPrefix}${nameTag(name)}-`)),
    );
    try {
      await fillStaging(staging, spec, fill, signal);
      const installed = await commit(staging, target, name, signal);
      log.debug({ model: name, dir: target, spec: specToJson(spec) }, 'model dir installed');
      return installed;
    } catch (cause) {
      await discardQuietly(staging);
      throw cause;
    }
  };

  const remove: ModelStore['remove'] = async (name) => discard(modelDir(name), name);

  const deleteModelDir = async (dir: string, name: string): Promise<void> => {
    try {
      await discard(dir, name);
    } catch (err) {
      log.error({ err, dir }, 'cannot delete a model dir; leaving it');
    }
  };

  /** The spec installed in `M/<name>`, or undefined after deleting a dir that holds no usable model. */
  const recoverModel = async (name: ModelName): Promise<ModelSpec | undefined> => {
    const dir = join(root, name);
    let state: DirState;
    try {
      state = await readDirState(dir);
    } catch (err) {
      log.error({ err, dir }, 'cannot read a model dir; leaving it');
      return undefined;
    }
    switch (state._tag) {
      case 'Valid':
        log.info({ model: name, spec: specToJson(state.spec) }, 'model recovered');
        return state.spec;
      case 'NoMarker':
        log.info({ dir }, 'model dir without a marker (interrupted download); deleting it');
        break;
      case 'Ambiguous':
        log.warn({ dir, files: state.files }, 'model dir with several markers; deleting it');
        break;
      case 'Corrupt':
        log.warn({ file: state.file, reason: state.reason }, 'corrupt model marker; deleting the model dir');
        break;
    }
    await deleteModelDir(dir, name);
    return undefined;
  };

  const recoverEntry = async (
    entry: { name: string; isDirectory: () => boolean },
    snapshot: Map<ModelName, ModelSpec>,
  ): Promise<void> => {
    const path = join(root, entry.name);
    if (entry.name.startsWith(stagingPrefix) || entry.name.startsWith(asidePrefix)) {
      log.info({ dir: path }, 'leftover temporary dir; deleting it');
      await discardQuietly(path);
    } else if (entry.name === lostAndFound || entry.name.startsWith('.') || !entry.isDirectory()) {
      log.debug({ path }, 'not a model dir; leaving it');
    } else if (modelNameProblem(entry.name) !== undefined) {
      log.warn(
        { dir: path, problem: modelNameProblem(entry.name) },
        'dir name is not a model name; leaving it',
      );
    } else {
      const name = entry.name as ModelName;
      const spec = await recoverModel(name);
      if (spec !== undefined) snapshot.set(name, spec);
    }
  };

  const recover: ModelStore['recover'] = async () => {
    // KServe panicked on a missing model dir; create it instead.
    await step(`cannot create ${root}`, () => mkdir(root, { recursive: true }));
    const entries = await step(`cannot list ${root}`, () => readdir(root, { withFileTypes: true }));
    const snapshot = new Map<ModelName, ModelSpec>();
    await forEachLimited(entries, recoverConcurrency, (entry) => recoverEntry(entry, snapshot));
    log.info({ dir: root, models: snapshot.size }, 'model dir recovered');
    // Sorted, so the snapshot (and the ops derived from it) do not depend on readdir or completion order.
    return new Map([...snapshot].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  };

  return { recover, install, remove };
};
