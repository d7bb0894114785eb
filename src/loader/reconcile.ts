/** The steps that bring one model to the state it should be in: bring in (download, load) and take out (unload, delete). */
import { downloadProgressFields, downloadProgressMessage } from '../core/download-progress';
import { toEffectError } from '../core/errors';
import type { Logger } from 'pino';
import type { ModelSpec } from '../core/model-config';
import type { ModelName } from '../core/model-name';
import type { FilesOrigin, ModelPhase, ModelStatus } from '../core/model-status';
import { specEquals } from '../core/snapshot';
import {
  filledBytes,
  type DownloadFunction,
  type DownloadProgress,
  type Installed,
  type LoadJournal,
  type ModelFiles,
  type ModelServer,
  type ModelStore,
  type Staged,
  type WrittenFiles,
} from '../ports';
import { nodeCacheSource, type ContentOffer, type ContentSharing } from './content-sharing';
import { linkedSignal } from './linked-signal';
import type { Slots } from '../core/slots';

/** What is in place for one model. The steps update it as each effect succeeds, so a failed step resumes there. */
export interface ModelState {
  readonly name: ModelName;
  onDisk: ModelSpec | undefined;
  loaded: boolean;
  /** The spec of the version the server loaded, when known. */
  loadedSpec: ModelSpec | undefined;
  /** The spec of the last load, when it got no answer (a timeout, a reset): the server may hold it all the same. */
  unanswered?: ModelSpec | undefined;
}

/** The ports the steps act through, the slots bounding them, and where they report each phase they enter. */
export interface ReconcileEffects {
  readonly store: ModelStore;
  readonly journal: LoadJournal;
  readonly server: ModelServer;
  /** Fills a directory with the model stored at a URI, reporting its progress. */
  readonly download: DownloadFunction;
  readonly slots: { readonly download: Slots; readonly load: Slots };
  readonly log: Logger;
  /**
   * `logFields` go on the phase's log line only (the `model loaded` line's bytes and durations); `details` on the
   * status (where the files came from).
   */
  readonly report: (
    name: ModelName,
    phase: ModelPhase,
    spec: ModelSpec | undefined,
    logFields?: Readonly<Record<string, number>>,
    details?: Pick<ModelStatus, 'filesFrom'>,
  ) => void;
  /** Hears of a running download's progress, and of its end. */
  readonly progress?: (name: ModelName, progress: DownloadProgress) => void;
  /** Fills a download from a model of the same content on disk or being downloaded; absent: every model downloads. */
  readonly content?: ContentSharing;
}

/**
 * `stop` aborts whatever step is in progress (shutdown); `supersede` (a newer desired state) aborts a download and
 * a load or unload still waiting for its slot, which it makes pointless. A load or unload already sent is left to
 * finish: the server may act on it anyway. `drain` (a graceful shutdown; absent: none) aborts one still waiting too.
 */
export interface StepSignals {
  readonly stop: AbortSignal;
  readonly supersede: AbortSignal;
  readonly drain?: AbortSignal | undefined;
}

/** What a load or unload waits for its slot with: the step's stop, its supersede and the drain if there is one. */
const slotWait = ({ stop, supersede, drain }: StepSignals): AbortSignal =>
  AbortSignal.any(drain === undefined ? [stop, supersede] : [stop, supersede, drain]);

const isOnDisk = (model: ModelState, spec: ModelSpec): boolean =>
  model.onDisk !== undefined && specEquals(model.onDisk, spec);

const isLoaded = (model: ModelState, spec: ModelSpec): boolean =>
  model.loaded && model.loadedSpec !== undefined && specEquals(model.loadedSpec, spec);

/** True when `desired` is what is in place (undefined: nothing on disk and nothing loaded). */
export const isInPlace = (model: ModelState, desired: ModelSpec | undefined): boolean =>
  desired === undefined
    ? !model.loaded && model.onDisk === undefined
    : isOnDisk(model, desired) && isLoaded(model, desired);

/**
 * After a failed load the server's version is not known: a failed reload may have dropped the old one (TorchServe
 * unregisters it before registering the new one), so a rollback to it must load it again, not take it as loaded.
 * A load that got no answer (a timeout, a reset, our own abort) may have gone through: `unanswered` keeps its
 * spec until a load succeeds (a later failure with an answer does not say it did not), so that the load of another
 * spec replaces it (TorchServe would otherwise take its 409 for the new files while it holds the old ones), while
 * the same spec is asked again as it was (a slow load still under way there converges).
 */
const forgetLoadedVersion = (model: ModelState, target: ModelSpec, error: unknown): void => {
  model.loadedSpec = undefined;
  if (!['timeout', 'network', 'aborted'].includes(toEffectError(error).kind)) return;
  // Two specs in doubt: whichever of them the server holds, each next load replaces it.
  if (model.unanswered !== undefined && !specEquals(model.unanswered, target)) model.loaded = true;
  model.unanswered = target;
};

/**
 * Brings `target` in as one straight line (docs/architecture.md, One model), each step skipped when its result is in
 * place (nothing downloaded: the load is journalled just before the call). The replaced version is deleted once the
 * server was asked to load the new one, whatever it answered.
 */
export const bringIn = async (
  model: ModelState,
  target: ModelSpec,
  effects: ReconcileEffects,
  { stop, supersede, drain }: StepSignals,
): Promise<void> => {
  const { store, journal, server, slots, log, report, content } = effects;
  let replaced: Installed | undefined;
  let journalled = false;
  let fetched: Fetched | undefined;
  const confirm = (): Promise<void> =>
    journal
      .confirmed(model.name)
      .catch((err: unknown) =>
        log.warn({ err, model: model.name }, 'could not record a confirmed load; a restart loads it again'),
      );
  try {
    // Files installed before this step may have been swapped since (the volume is shared): re-install, not load them.
    if (
      isOnDisk(model, target) &&
      !isLoaded(model, target) &&
      !(await store.isInstalled(model.name, target))
    ) {
      model.onDisk = undefined;
      content?.forget(model.name);
    }
    if (!isOnDisk(model, target)) {
      report(model.name, 'Downloading', target);
      const signal = AbortSignal.any([stop, supersede]);
      replaced = await slots.download.use(signal, async () => {
        const staged = await store.stage(model.name, target, signal);
        const offer = content?.offer(model.name, staged, signal);
        let committed = false;
        try {
          fetched = await fetchInto(model.name, target, staged, signal, effects, offer);
          // Journalled once the files are in, before the swap, not at the load: a crash while the new version waits
          // for a load slot must come back as a load, though the server reports the model loaded (the old version).
          // The record is written while the dir is marked; the commit swaps only once it is.
          const vet = async (files: ModelFiles): Promise<void> =>
            server.vetFiles?.(model.name, files, signal);
          const installed = await staged.commit(journal.starting(model.name), fetched.written, vet);
          journalled = true;
          committed = true;
          return installed;
        } finally {
          // Inside the download slot, before any wait for a load slot: models waiting for this download go on now.
          offer?.settle(committed);
        }
      });
      model.onDisk = target;
    }
    let loadMs: number | undefined;
    if (!isLoaded(model, target)) {
      report(model.name, 'Loading', target, undefined, fetched && { filesFrom: fetched.filesFrom });
      const loadStarted = performance.now();
      await slots.load.use(slotWait({ stop, supersede, drain }), async () => {
        if (!journalled) await journal.starting(model.name);
        // A load that got no answer may have loaded the spec it was for: another spec replaces it.
        const { unanswered } = model;
        const replacing = model.loaded || (unanswered !== undefined && !specEquals(unanswered, target));
        await server.load(model.name, replacing, stop).catch((error: unknown) => {
          forgetLoadedVersion(model, target, error);
          throw error;
        });
        model.unanswered = undefined;
      });
      // The server has loaded it: a record not written (a full disk) costs one reload after a restart, no failure.
      // Written once the load slot is free: the next load need not wait for the journal.
      await confirm();
      model.loaded = true;
      model.loadedSpec = target;
      loadMs = Math.round(performance.now() - loadStarted);
    } else if (journalled) {
      // Installed again while the server holds this very version (changed back before the other one loaded): its
      // install's `starting` record is confirmed too, or a restart would take it for a load never confirmed.
      await confirm();
    }
    report(model.name, 'Loaded', target, { ...fetched?.logFields, ...(loadMs !== undefined && { loadMs }) });
  } finally {
    await replaced
      ?.dropReplaced()
      .catch((error: unknown) =>
        log.warn({ err: error, model: model.name }, 'could not delete a replaced model version'),
      );
  }
};

/**
 * How a model's files came, for the status (`filesFrom`) and the `model loaded` line (bytes downloaded, or bytes
 * filled from another model: none downloaded); `written`: the files the provider says it wrote, for the manifest.
 */
interface Fetched {
  readonly filesFrom: FilesOrigin;
  readonly logFields: Readonly<Record<string, number>>;
  readonly written?: WrittenFiles | undefined;
}

/** Downloads `target` into the staging dir, offering `offer` to fill it instead; abandons the dir on failure. */
const fetchInto = async (
  name: ModelName,
  target: ModelSpec,
  staged: Staged,
  signal: AbortSignal,
  { download, log, progress: onProgress }: ReconcileEffects,
  offer: ContentOffer | undefined,
): Promise<Fetched> => {
  const started = performance.now();
  let final: DownloadProgress | undefined;
  let written: WrittenFiles | void;
  try {
    written = await staged.filling(signal, (watched) =>
      download(
        target.storageUri,
        staged.dir,
        watched,
        (progress) => {
          onProgress?.(name, progress);
          if (progress.done) final = progress;
          else log.info({ model: name, ...downloadProgressFields(progress) }, downloadProgressMessage);
        },
        { select: target.selection, reuse: offer?.reuse, identifyFirst: offer?.identifyFirst },
      ),
    );
  } catch (cause) {
    throw await staged.abandon(cause);
  }
  const filled = offer?.filled();
  if (filled !== undefined) {
    const downloadMs = Math.round(performance.now() - started);
    const logFields = { filledBytes: filledBytes(filled), downloadMs };
    return { filesFrom: filled.source === nodeCacheSource ? 'node-cache' : 'model', logFields };
  }
  const logFields = final && { bytes: final.bytes, downloadMs: final.elapsedMs };
  return { filesFrom: 'storage', logFields: logFields ?? {}, written: written ?? undefined };
};

/**
 * Unloads the model first (the server may hold it even when it is not known to be loaded), then deletes its files.
 * `supersede` (the model wanted again) gives up the unload while it waits for its slot.
 */
export const takeOut = async (
  model: ModelState,
  { store, journal, server, slots, report, content }: ReconcileEffects,
  stop: AbortSignal,
  drain?: AbortSignal,
  supersede: AbortSignal = new AbortController().signal,
): Promise<void> => {
  report(model.name, 'Unloading', undefined);
  await slots.load.use(slotWait({ stop, supersede, drain }), () =>
    server.unload(model.name, stop).catch((error: unknown) => {
      // The server may have unloaded it all the same (an unload that got no answer, one it gave up half done): the
      // version it holds, if any, is not known, so a model wanted again is loaded again, not taken as loaded.
      model.loadedSpec = undefined;
      throw error;
    }),
  );
  model.loaded = false;
  model.loadedSpec = undefined;
  model.unanswered = undefined;
  if (model.onDisk !== undefined) {
    content?.forget(model.name);
    await store.remove(model.name);
    model.onDisk = undefined;
    await journal.confirmed(model.name); // a removed model has no load to redo
  }
  report(model.name, 'Removed', undefined);
};

/**
 * Brings in `desired`, or takes the model out when it is undefined; rejects with the failed step's error. The
 * effects see `stop` and `drain`, both run-long, through signals of this step alone (see linkedSignal).
 */
export const reconcile = async (
  model: ModelState,
  desired: ModelSpec | undefined,
  effects: ReconcileEffects,
  { stop, supersede, drain }: StepSignals,
): Promise<void> => {
  const step = linkedSignal(stop);
  const draining = drain && linkedSignal(drain);
  try {
    await (desired === undefined
      ? takeOut(model, effects, step.signal, draining?.signal, supersede)
      : bringIn(model, desired, effects, { stop: step.signal, supersede, drain: draining?.signal }));
  } finally {
    step.dispose();
    draining?.dispose();
  }
};
