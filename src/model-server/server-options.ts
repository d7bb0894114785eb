/** What both model-server clients are given: where the server listens, how long calls may take. */
import type { Dispatcher } from 'undici';
import { redactUri } from '../core/redact';

/** Where the server listens and how long calls may take. */
export interface ServerOptions {
  /** The HTTP root: `http://127.0.0.1:8000` (Triton), `http://127.0.0.1:8081` (TorchServe's management API). */
  readonly baseUrl: string;
  /** Timeout of index and unload calls, and of loads unless `loadTimeoutMs` is given; default 30 s. */
  readonly timeoutMs?: number;
  /** Timeout of a load, which returns once the model is loaded (TorchServe: a worker started); default 300 s. */
  readonly loadTimeoutMs?: number;
  /** The connection pool (a Network's `direct`: keep-alive, never through a proxy); default undici's global one. */
  readonly dispatcher?: Dispatcher;
}

/** The root without trailing slashes, the server as messages name it (no user info or query), the timeouts. */
export const serverEndpoint = (
  options: ServerOptions,
): { base: string; shown: string; timeoutMs: number; loadTimeoutMs: number } => {
  const base = options.baseUrl.replace(/\/+$/, '');
  return {
    base,
    shown: redactUri(base),
    timeoutMs: options.timeoutMs ?? 30_000,
    loadTimeoutMs: options.loadTimeoutMs ?? options.timeoutMs ?? 300_000,
  };
};
