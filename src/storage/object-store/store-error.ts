/** storeStatusError: an object store's error answer (HTTP status and the store's own code) as an EffectError. */
import { EffectError, httpStatusError, permanentError, retryableError } from '../../core/errors';

/** An error answer of an object store to a list or a read. */
export interface StoreAnswer {
  /** Names the request: `listing gs://models/m1`, `reading gs://models/m1/a.bin`. */
  readonly what: string;
  readonly status: number;
  /** What was asked: a list (of a bucket or container) or a read (of one listed object). */
  readonly phase: 'list' | 'read';
  /** The store's own words: its error code (`BlobNotFound`, `notFound`) and message. */
  readonly detail?: string;
  /** The wait its Retry-After asked for (retryAfterOf), if it named one. */
  readonly retryAfterMs?: number | undefined;
}

/**
 * The one reading of a store's error statuses. A list answered 404 names a bucket or container that does not
 * exist: permanent `not-found`. A read answered 404 (the object went away) or 412 (its version moved) means the
 * listing is stale: retryable `changed`, and the retry lists again. 401 and 403 (bad or missing credentials,
 * access denied) are permanent; other statuses follow the HTTP rule (429 and 5xx retry).
 */
export const storeStatusError = (answer: StoreAnswer): EffectError => {
  const { what, status, phase } = answer;
  const detail = (answer.detail ?? '').trim().slice(0, 300);
  const said = detail === '' ? `HTTP ${status}` : `HTTP ${status} ${detail}`;
  if (status === 404 && phase === 'list') return permanentError('not-found', `${what}: not found (${said})`);
  if ((status === 404 || status === 412) && phase === 'read') {
    return retryableError(
      'changed',
      `${what}: the object changed or went away since it was listed (${said})`,
    );
  }
  if (status === 401 || status === 403) {
    return new EffectError(`${what}: access denied (${said})`, false, { kind: 'http-status', status });
  }
  return httpStatusError(what, status, detail, answer.retryAfterMs);
};
