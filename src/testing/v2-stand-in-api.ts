/** What the V2 stand-in takes and what it reports: its options, the requests and loads it saw, its faults. */
import type { ModelManifest } from './model-manifest';
import type { V2ProfileName } from './v2-profiles';

/** How to start the stand-in. */
export interface V2ModelServerStandInOptions {
  /**
   * The real server it plays (src/testing/v2-profiles.ts: codes, bodies, index entries, unload timing as recorded
   * from Triton 2.51, MLServer 1.7.1 and KServe 0.21); default `generic`, the stand-in's own reading of the protocol.
   * A profiled stand-in reads each model dir's `stand-in.json` to know how the real server would take the model.
   */
  readonly profile?: V2ProfileName;
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Port; default 0 (any free port, see `url`). */
  readonly port?: number;
  /**
   * The model repository. When set, a load succeeds only if `<modelDir>/<name>/` holds a `SUCCESS.*` marker when
   * the load starts and when it ends, the way a real server reads the files during the load.
   */
  readonly modelDir?: string;
  /**
   * With `modelDir`: the files each model version must consist of, by version (the `storageUri` in the model dir's
   * `SUCCESS.*` marker). A load then succeeds only if the dir holds exactly that version's files with their
   * content, when the load starts and when it ends; each load records the `version` and any `problem` found.
   */
  readonly manifest?: (version: string) => ModelManifest | undefined;
  /** Status of an unload of a model that is not loaded: 404 like MLServer and KServe (default), 200 like Triton. */
  readonly unknownUnloadStatus?: 200 | 404;
  /** How long each load takes; default 0. */
  readonly loadDelayMs?: number;
  /**
   * Called with each request as it arrives, before its body is read and before it is answered (the same object
   * `requests` gets): lets a test or bench react at that instant, e.g. take `performance.now()`, without polling.
   */
  readonly onRequest?: (request: V2Request) => void;
}

/** A request the stand-in received; `name` is the decoded model name on model routes. */
export interface V2Request {
  readonly method: string;
  readonly path: string;
  readonly name?: string;
  /** `Date.now()` when it arrived. */
  readonly at: number;
}

/** A finished load request: whether the model's files were complete, and the status answered. */
export interface V2Load {
  readonly name: string;
  readonly complete: boolean;
  readonly status: number;
  /** With a `manifest`: the version the marker named (at the end of the load, else at its start). */
  readonly version?: string;
  /** With a `manifest`: why the files did not match it, when they did not. */
  readonly problem?: string;
}

/** The stand-in's routes a fault can be injected on. */
export type V2Route = 'index' | 'load' | 'unload';

/**
 * What a faulty server does instead of serving a request: answer `status` with `body` (text, as it is) and
 * `headers` (a load or unload answered so does nothing), never answer (until `close`), or reset the connection.
 */
export type V2Fault =
  | {
      readonly status: number;
      readonly body?: string;
      readonly headers?: Readonly<Record<string, string>>;
    }
  | { readonly hang: true }
  | { readonly reset: true };

/** The running stand-in and what it observed. */
export interface V2ModelServerStandIn {
  /** `http://<host>:<port>`, the base URL to give the client. */
  readonly url: string;
  /** Stops listening and drops open (keep-alive) connections; loads still waiting are abandoned. */
  close(): Promise<void>;
  /** The models loaded now (a live view). */
  readonly loaded: ReadonlySet<string>;
  /** Every request, in arrival order. */
  readonly requests: ReadonlyArray<V2Request>;
  /** Every load that ran to its end (injected failures included), in completion order. */
  readonly loads: ReadonlyArray<V2Load>;
  /** The most loads that were in flight at once. */
  readonly maxConcurrentLoads: number;
  /** Makes the next `n` loads fail with `status` (default 503) and an `{"error"}` body, after the load delay. */
  failNextLoads(n: number, status?: number): void;
  /** Sets how long each load started from now on takes. */
  setLoadDelay(ms: number): void;
  /** Marks models loaded without a request, as if the server had loaded them at its own start. */
  preload(...names: string[]): void;
  /**
   * Answers the next `times` requests on `route` (default 1; `Infinity` for all) with `fault` instead of serving
   * them; a later call for the route replaces the earlier one, `times` 0 clears it. Faulted requests are in
   * `requests`, not in `loads`.
   */
  injectFault(route: V2Route, fault: V2Fault, times?: number): void;
}
