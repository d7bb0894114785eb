/**
 * V2Dialect: what Triton, MLServer and the KServe model server do differently behind one protocol, as measured on
 * the real servers (docs/model-servers.md), so the client does not guess.
 */
import type { ModelName } from '../core/model-name';
import type { V2ServerKind } from '../core/v2-server-kinds';
import type { ModelFiles } from '../ports';
import { mlserverSettingsVet } from './mlserver-settings';
import { mlserverNameFile, tritonNameFile, type NameFile } from './name-in-files';

/** How one server kind is spoken to. */
export interface V2Dialect {
  readonly kind: V2ServerKind;
  /** The name as it goes into a URL path: Triton looks the path up without decoding it, the others decode it. */
  readonly pathName: (name: ModelName) => string;
  /** Why this server cannot be trusted with `name` (it would hang or misread it), or undefined. */
  readonly nameProblem: (name: ModelName) => string | undefined;
  /** How the loaded models are asked for: the repository index, or (KServe, which has no index) the model list. */
  readonly listing: 'repository-index' | 'model-list';
  /** True for a failed load whose answer says a retry with the same files cannot succeed. */
  readonly isFinalLoadFailure: (status: number, reason: string) => boolean;
  /**
   * True for a load refused for what is not in its files but may come (another model), which a later retry may
   * find: retried. `files`: the text of its `nameFile` (null: none there; undefined: not read).
   */
  readonly isPendingLoadFailure: (
    status: number,
    reason: string,
    files: string | null | undefined,
  ) => boolean;
  /** True when an unload's 200 comes before the model is gone (Triton): the index says when it is. */
  readonly unloadReturnsEarly: boolean;
  /** The file whose name for the model must be the config's, checked before a load (absent: none is read). */
  readonly nameFile?: NameFile;
  /** What the server would misread in a model's files, refused before they are opened to it (`ModelServer.vetFiles`). */
  readonly vetFiles?: (name: ModelName, files: ModelFiles) => Promise<void>;
}

// Triton starts the python backend's stub through `bash -c` with the model's path unquoted: a name with a shell
// character hangs the load for good and runs what it spells; a space gets no answer; non-ASCII fails in the stub.
// These are the characters that were loaded, served and unloaded on the real server.
const tritonName = /^[A-Za-z0-9_.+:-]+$/;

/** True for the text of an ensemble's config.pbtxt (its `ensemble_scheduling`, a word no other config holds). */
const isEnsembleConfig = (text: string | null | undefined): boolean =>
  typeof text === 'string' && /\bensemble_scheduling\b/.test(text);

const generic: V2Dialect = {
  kind: 'generic',
  pathName: encodeURIComponent,
  nameProblem: () => undefined,
  listing: 'repository-index',
  isFinalLoadFailure: () => false,
  isPendingLoadFailure: () => false,
  unloadReturnsEarly: false,
};

/** The dialect of each kind: a kind of `v2ServerKinds` without one does not compile. */
export const v2Dialects: Readonly<Record<V2ServerKind, V2Dialect>> = {
  generic,
  triton: {
    kind: 'triton',
    pathName: (name) => name,
    nameProblem: (name) =>
      tritonName.test(name)
        ? undefined
        : 'Triton takes only letters, digits and . _ + : - in a model name (it passes the name to a shell ' +
          'unquoted and looks it up without decoding it)',
    listing: 'repository-index',
    // "failed to poll from model repository": no dir, or a config.pbtxt it cannot read or whose name differs.
    isFinalLoadFailure: (status, reason) => status === 500 && reason.includes('failed to poll'),
    // An ensemble's member not in the repository yet (listed beside it, the ensemble's small dir is downloaded
    // first): 400 "ensemble <name> contains models that are not available or ambiguous: <members>", and a load of
    // it again 500 "failed to poll" (Triton polls the members too). Triton loads it itself once they load.
    isPendingLoadFailure: (status, reason, files) =>
      (status === 400 && reason.includes('contains models that are not available or ambiguous')) ||
      (status === 500 && reason.includes('failed to poll') && isEnsembleConfig(files)),
    unloadReturnsEarly: true,
    // A name there other than the dir's is one more "failed to poll", which would not say why.
    nameFile: tritonNameFile,
  },
  mlserver: {
    ...generic,
    kind: 'mlserver',
    // The model's own code raised (`builtins.RuntimeError: …`, or a traceback with MLSERVER_PARALLEL_WORKERS=0);
    // a worker that died is another matter: the pool restarts it.
    isFinalLoadFailure: (status, reason) =>
      status === 500 &&
      (/^\S+\.\w*(Error|Exception)\b/.test(reason) || reason.startsWith('Traceback')) &&
      !reason.includes('Worker process stopped'),
    // A name there other than the dir's is a 404 "Model <dir> not found": the file's name wins.
    nameFile: mlserverNameFile,
    vetFiles: mlserverSettingsVet,
  },
  kserve: {
    ...generic,
    kind: 'kserve',
    listing: 'model-list',
    // Every load failure is a 503 naming the exception; a 503 without it (a proxy, a restart) may pass.
    isFinalLoadFailure: (status, reason) => status === 503 && reason.includes('is not ready. Error type:'),
  },
};
