/**
 * Content sharing: models of one stored content are downloaded once. A download of an identity an installed model
 * holds is filled from its dir; one another model is downloading now waits for it, then fills from it. With a node
 * cache, the one download of an identity on the node fills the others, in every modelsync there.
 */
import type { Logger } from 'pino';
import type { ModelName } from '../core/model-name';
import {
  filledBytes,
  noTelemetry,
  type CacheTake,
  type Filled,
  type ModelStore,
  type NodeCacheEvent,
  type Staged,
  type Telemetry,
} from '../ports';
import { untilAborted } from '../core/waits';
import { createContentRegistry, type ContentRegistry } from './content-registry';

/** The `source` of a fill from the node cache. */
export const nodeCacheSource = 'node cache';

/** Candidates tried by one offer before it downloads: each one that fails is forgotten, so the next offer goes on. */
const triesPerOffer = 8;

/** The reuse offer of one download, and how its end is told. */
export interface ContentOffer {
  /** `DownloadRequest.reuse`: true once the staging dir was filled from a model of `identity`. */
  readonly reuse: (identity: string) => Promise<boolean>;
  /**
   * The download ended: `committed` when its dir is in place (the model is then a source of the identity it was
   * offered). Models waiting for it go on. Call once, whatever happened.
   */
  readonly settle: (committed: boolean) => void;
  /** `DownloadRequest.identifyFirst`: a node cache is on, so `reuse` is likely to fill. */
  readonly identifyFirst: boolean;
  /** What the fill brought and from where, when the dir was filled rather than downloaded. */
  readonly filled: () => (Filled & { readonly source: ModelName | typeof nodeCacheSource }) | undefined;
}

/** Offers for the downloads of one loader; what it remembers outlives a run, as the model dir does. */
export interface ContentSharing {
  /** The offer for a download of `name` into `staged`; `signal` aborts a wait for another model's download. */
  readonly offer: (name: ModelName, staged: Staged, signal: AbortSignal) => ContentOffer;
  /** `name`'s dir is gone or no longer as installed: nothing is filled from it. */
  readonly forget: (name: ModelName) => void;
}

/**
 * Sharing over `store.fillFrom`. Waiting cannot deadlock: only an offer that leads no download waits, and a
 * leader's download ends (commit or failure) inside its own download slot, before it waits for anything else.
 */
export const createContentSharing = ({
  store,
  log,
  registry = createContentRegistry(),
  telemetry = noTelemetry,
}: {
  readonly store: Pick<ModelStore, 'fillFrom' | 'nodeCache'>;
  readonly log: Logger;
  readonly registry?: ContentRegistry | undefined;
  /** Hears the node cache's hits, misses and evictions. */
  readonly telemetry?: Telemetry | undefined;
}): ContentSharing => {
  /** The download of each identity running now, and when it ends. */
  const leads = new Map<string, { readonly done: Promise<void> }>();

  /**
   * Tells `event` to the telemetry (an integrator's): a throw from it is a defect, logged, and changes nothing here (it
   * was taken for a failure of the cache, and a dir the cache had filled was downloaded into again).
   */
  const tell = (model: ModelName, event: NodeCacheEvent): void => {
    try {
      telemetry.nodeCache?.(event);
    } catch (err) {
      log.error({ err, model }, 'the node cache telemetry threw: a defect; going on');
    }
  };

  /** Publishes or releases `claim` in the background; neither fails (the cache logs its own failures): a throw is a defect. */
  const endClaim = (
    model: ModelName,
    claim: Extract<CacheTake, { _tag: 'Claimed' }>,
    committed: boolean,
  ): void => {
    const ending = committed
      ? claim.publish().then(({ evicted }) => {
          if (evicted > 0) tell(model, { _tag: 'Evicted', entries: evicted });
        })
      : claim.release();
    ending.catch((err: unknown) =>
      log.error(
        { err, model },
        committed
          ? 'publishing to the node cache threw: a defect'
          : 'releasing a node cache claim threw: a defect',
      ),
    );
  };

  const offer = (name: ModelName, staged: Staged, signal: AbortSignal): ContentOffer => {
    let identity: string | undefined;
    /** The identity this offer's download leads, once it found no source and nobody downloading it. */
    let leading: string | undefined;
    let offered = false;
    let settled = false;
    let filled: (Filled & { source: ModelName | typeof nodeCacheSource }) | undefined;
    /** The node cache's claim on the identity this offer downloads: published or released at the settle. */
    let claim: Extract<CacheTake, { _tag: 'Claimed' }> | undefined;
    let ended!: () => void;
    const lead = { done: new Promise<void>((resolve) => (ended = resolve)) };

    const fillFromSources = async (wanted: string): Promise<boolean> => {
      for (const source of registry.sources(wanted).slice(0, triesPerOffer)) {
        const result = await store.fillFrom(source, staged, signal);
        if (result === undefined) {
          registry.forget(source); // the store said why; the next offer tries the next one
          continue;
        }
        filled = { ...result, source };
        log.info({ model: name, source, ...result }, 'model filled from another model');
        return true;
      }
      return false;
    };

    // The node cache only speeds a download up: a failure of its own (not an abort) is logged and the model downloaded.
    const fromNodeCache = async (wanted: string): Promise<boolean> => {
      if (store.nodeCache === undefined) return false;
      try {
        const taken = await store.nodeCache.take(wanted, staged, signal);
        if (taken._tag === 'Claimed') {
          claim = taken;
          tell(name, { _tag: 'Miss' });
          return false;
        }
        filled = { ...taken.filled, source: nodeCacheSource };
        tell(name, { _tag: 'Hit', bytes: filledBytes(taken.filled) });
        log.info(
          { model: name, source: nodeCacheSource, ...taken.filled },
          'model filled from the node cache',
        );
        return true;
      } catch (err) {
        if (signal.aborted) throw err;
        log.warn({ err, model: name }, 'the node cache failed; downloading');
        return false;
      }
    };

    const reuse = async (wanted: string): Promise<boolean> => {
      // One offer, one identity: a second call (a provider's mistake) neither waits nor names what the dir holds.
      if (offered || settled) {
        identity = undefined;
        return false;
      }
      offered = true;
      identity = wanted;
      for (;;) {
        if (await fillFromSources(wanted)) return true;
        // Stopped while it looked (the lead it waited for ended by the same stop): it leads no download.
        signal.throwIfAborted();
        const running = leads.get(wanted);
        if (running === undefined) {
          leads.set(wanted, lead); // checked and set in one turn: of the offers woken together, one leads
          leading = wanted;
          return await fromNodeCache(wanted);
        }
        await untilAborted(running.done, signal);
      }
    };

    const settle = (committed: boolean): void => {
      if (settled) return;
      settled = true;
      // Recorded before the waiters wake, so that they find the dir they were waiting for.
      if (committed) registry.installed(name, identity);
      if (leading !== undefined) leads.delete(leading);
      // Published from the installed dir, which the commit just put in place; the node's others wait till then.
      if (claim !== undefined) endClaim(name, claim, committed);
      ended();
    };

    return { reuse, settle, identifyFirst: store.nodeCache !== undefined, filled: () => filled };
  };

  return { offer, forget: (name) => registry.forget(name) };
};
