/** In-memory ports that record every call as one line, for tests of the loader's logic apart from real edges. */
import type { EffectError } from '../../src/core/errors';
import type { LoadJournal, ModelServer, ModelStore } from '../../src/ports';

/** The errors loads of each model fail with, in order (once they are used up, its loads succeed). */
export interface RecordingFailures {
  readonly load?: Readonly<Record<string, EffectError[]>>;
  /** The errors the journal's records of each model's loads starting fail with, in order. */
  readonly starting?: Readonly<Record<string, EffectError[]>>;
  /** The errors the journal's records of each model's loads confirmed fail with, in order. */
  readonly confirmed?: Readonly<Record<string, EffectError[]>>;
  /** The errors unloads of each model fail with, in order. */
  readonly unload?: Readonly<Record<string, EffectError[]>>;
}

/** The loader's ports; `calls` lists every call as e.g. `install m1 /models/v1` or `load m1 replacing`. */
export interface RecordingPorts {
  readonly ports: {
    readonly store: ModelStore;
    readonly journal: LoadJournal;
    readonly server: ModelServer;
    readonly download: (uri: string, dir: string, signal: AbortSignal) => Promise<void>;
  };
  readonly calls: string[];
}

export const recordingPorts = (fail: RecordingFailures = {}): RecordingPorts => {
  const calls: string[] = [];
  const record = (call: string): Promise<void> => Promise.resolve(void calls.push(call));
  return {
    calls,
    ports: {
      store: {
        recover: () => Promise.resolve(new Map()),
        stage: (model, spec) => {
          calls.push(`install ${model} ${spec.storageUri}`);
          return Promise.resolve({
            dir: '/staging',
            filling: (signal, fill) => fill(signal),
            commit: async (beforeSwap) => {
              await beforeSwap;
              return { dropReplaced: () => record(`dropReplaced ${model}`) };
            },
            abandon: (cause) => Promise.resolve(cause),
          });
        },
        remove: (model) => record(`remove ${model}`),
        // Nothing shares this store: what it installed stays installed.
        isInstalled: () => Promise.resolve(true),
        // Its staging dirs hold no files to share.
        fillFrom: () => Promise.resolve(undefined),
      },
      journal: {
        starting: (model) => {
          const failure = fail.starting?.[model]?.shift();
          return failure ? Promise.reject(failure) : record(`journal starting ${model}`);
        },
        confirmed: (model) => {
          const failure = fail.confirmed?.[model]?.shift();
          return failure ? Promise.reject(failure) : record(`journal confirmed ${model}`);
        },
        unconfirmed: () => Promise.resolve(new Set()),
      },
      server: {
        load: (model, replacing) => {
          calls.push(`load ${model}${replacing ? ' replacing' : ''}`);
          const failure = fail.load?.[model]?.shift();
          return failure ? Promise.reject(failure) : Promise.resolve();
        },
        unload: (model) => {
          calls.push(`unload ${model}`);
          const failure = fail.unload?.[model]?.shift();
          return failure ? Promise.reject(failure) : Promise.resolve();
        },
        loadedModels: () => Promise.resolve(new Set()),
      },
      download: (uri, dir) => record(`download ${uri} into ${dir}`),
    },
  };
};
