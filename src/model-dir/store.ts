/** modelDirStore: the model directory M, filled through staging dirs and renames so no one sees half a model, and no neighbour's link is ever followed. */
import { specEquals } from '../core/snapshot';
import type { ModelStore, NodeCache, Staged } from '../ports';
import { mountWatch, type MountCheck, type MountWatch, type SpaceCheck } from '../fs';
import { backgroundFlusher } from './background-flush';
import type { Logger } from '../log';
import { fillFromModelDir } from './fill-from';
import { nodeCacheStore } from './node-cache';
import type { EvictionBudget } from './node-cache-eviction';
import { describeFound, modelDirRoot } from './model-dir-root';
import { modelDirRecovery } from './recovery';
import { stager, type StagingArea } from './stage';

export interface ModelDirOptions {
  readonly root: string;
  readonly log: Logger;
  /** The disk check (`--min-free-bytes`) every install must pass before it starts; absent: none. */
  readonly spaceCheck?: SpaceCheck;
  /** `--link-same-content`: fill models of one content with hard links, not copies (`FillFromModelDir.link`). */
  readonly linkSameContent?: boolean;
  /** `--node-cache-dir` and its budgets: the dir every modelsync on the node shares; absent: no node cache. */
  readonly nodeCache?: { readonly dir: string } & EvictionBudget;
  /** How the store finds out that the model dir's mount stopped answering (`mountWatch`; tests shorten it). */
  readonly mountCheck?: MountCheck;
}

/**
 * `cache`'s calls under `cacheWatch` too (the node cache dir is a mount of its own): a claim that comes back after its
 * caller gave up is released (the others on the node would wait for it), and a publish or release on a cache that
 * does not answer ends as their contract says, without a throw.
 */
const watchedCache = (cache: NodeCache, cacheWatch: MountWatch): NodeCache => ({
  take: (identity, staged, signal) =>
    cacheWatch(
      async () => {
        const took = await cache.take(identity, staged, signal);
        if (took._tag !== 'Claimed') return took;
        return {
          ...took,
          publish: () => cacheWatch(took.publish).catch(() => ({ evicted: 0 })),
          release: () => cacheWatch(took.release).catch(() => undefined),
        };
      },
      (late) => void (late._tag === 'Claimed' ? late.release().catch(() => undefined) : undefined),
    ),
});

/** `store` with every call run under `watch` (a staged dir's own calls run under it too: `StagingArea.watch`). */
const watched = (store: ModelStore, watch: MountWatch): ModelStore => {
  const cache = store.nodeCache;
  return {
    nodeCache: cache && {
      take: (identity, staged, signal) => watch(() => cache.take(identity, staged, signal)),
    },
    recover: () => watch(() => store.recover()),
    // A staging dir made once its caller gave up on the mount is removed, not left to the next start's recovery.
    stage: (name, spec, signal) =>
      watch(
        () => store.stage(name, spec, signal),
        (late) => void late.abandon(new Error('the model dir answered too late')).catch(() => undefined),
      ),
    fillFrom: (source, staged, signal) => watch(() => store.fillFrom(source, staged, signal)),
    remove: (name) => watch(() => store.remove(name)),
    isInstalled: (name, spec) => watch(() => store.isInstalled(name, spec)),
  };
};

/** The local model directory `M` as a ModelStore; see ports.ts for the contract. */
export const modelDirStore = (options: ModelDirOptions): ModelStore => {
  const m = modelDirRoot(options.root, options.log.child({ component: 'model-dir' }));
  const { log, modelDir } = m;
  const { spaceCheck, linkSameContent: link = false } = options;
  const watch = mountWatch({ ...options.mountCheck, root: m.root, log });
  const flush = backgroundFlusher(m.root, log);
  const area: StagingArea = { m, flush, spaceCheck, open: new WeakMap(), watch };
  const staging = (staged: Staged, what: string) => {
    const into = area.open.get(staged);
    if (into === undefined) throw new Error(`${what}: not a staging dir of this store, or already settled`);
    return into;
  };
  const { nodeCache } = options;
  const store: ModelStore = {
    nodeCache:
      nodeCache &&
      watchedCache(
        nodeCacheStore(nodeCache, modelDir, (staged) => staging(staged, 'nodeCache'), log),
        mountWatch({ ...options.mountCheck, root: nodeCache.dir, log, what: 'the node cache dir' }),
      ),
    recover: modelDirRecovery(m),
    stage: stager(area),
    fillFrom: async (source, staged, signal) => {
      const into = staging(staged, 'fillFrom');
      return fillFromModelDir({ ...into, source, path: modelDir(source), signal, log, spaceCheck, link });
    },
    remove: async (name) => {
      const path = modelDir(name);
      const found = await m.inspect(path);
      if (found._tag === 'Dir' && found.foreign !== undefined && found.state._tag !== 'Valid') {
        log.debug({ dir: path, found: found.foreign }, 'not a model dir modelsync owns; leaving it');
        return;
      }
      await m.discard(path, name);
    },
    isInstalled: async (name, spec) => {
      const path = modelDir(name);
      const found = await m.inspect(path);
      if (found._tag === 'Dir' && found.state._tag === 'Valid' && specEquals(found.state.spec, spec))
        return true;
      log.warn(
        { model: name, dir: path, found: describeFound(found) },
        'model dir is not as installed; it will be installed again',
      );
      return false;
    },
  };
  return watched(store, watch);
};
