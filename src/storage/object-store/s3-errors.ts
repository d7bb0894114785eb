/** s3Error: the one classification of what the AWS SDK throws at a listing or a read, as an EffectError naming bucket and key. */
import {
  EffectError,
  isAbortError,
  isRetryableStatus,
  retryableError,
  retryAfterOf,
} from '../../core/errors';
import { transportError } from '../../net';

/** The request that failed: its words for messages, and whether its caller aborted it. */
export interface S3Request {
  /** `listing s3://models/m1/ (bucket models, prefix m1/)`, `reading m1/model.bin from bucket models`. */
  readonly what: string;
  readonly signal: AbortSignal;
  /** True for a read of an object that was listed: a missing key or a failed precondition means it changed. */
  readonly listed?: boolean;
  /** True once the response body is being read: a failure then is a lost connection. */
  readonly inBody?: boolean;
}

/** What the SDK's service exceptions carry (duck-typed: their classes are per client). */
interface ServiceFailure {
  readonly name: string;
  readonly message?: string;
  readonly $metadata: { readonly httpStatusCode?: number };
  /** The answer, as the SDK keeps it: its Retry-After is the store's pause. */
  readonly $response?: { readonly headers?: Readonly<Record<string, string | undefined>> };
}

const isServiceFailure = (cause: unknown): cause is ServiceFailure =>
  typeof cause === 'object' &&
  cause !== null &&
  typeof (cause as { name?: unknown }).name === 'string' &&
  typeof (cause as { $metadata?: unknown }).$metadata === 'object';

// Error codes that say the credentials are wrong or lack a permission: no retry fixes them.
const deniedCodes = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'AllAccessDisabled',
  'AccountProblem',
  'InvalidObjectState',
]);
// Codes S3 answers with a 4xx status that pass on their own: a slow request, a clock or a session token the
// credential chain refreshes.
const transientCodes = new Set([
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'ExpiredToken',
  'SlowDown',
  'Throttling',
]);

const serviceError = (failure: ServiceFailure, request: S3Request): EffectError => {
  const status = failure.$metadata.httpStatusCode;
  const code = failure.name;
  // A 2xx the SDK's parser failed on (XML nested past its stack, a `__proto__` element) is no service error: an
  // answer no S3 sends, said as such, with no parser internals in the words.
  if (status !== undefined && status < 300)
    return retryableError(
      'invalid-response',
      `${request.what}: HTTP ${status} with an answer that is no S3 answer`,
    );
  // The service's own words: `AccessDenied: Access Denied (HTTP 403)`.
  const message = failure.message !== undefined && failure.message !== code ? `: ${failure.message}` : '';
  const text = `${request.what}: ${code}${message}${status !== undefined ? ` (HTTP ${status})` : ''}`;
  if (code === 'NoSuchBucket') return new EffectError(text, false, { kind: 'not-found', status });
  if (request.listed === true && ['NoSuchKey', 'PreconditionFailed', 'InvalidRange'].includes(code)) {
    return new EffectError(`${text}; it changed since it was listed`, true, { kind: 'changed', status });
  }
  if (code === 'NoSuchKey') return new EffectError(text, false, { kind: 'not-found', status });
  if (deniedCodes.has(code))
    return new EffectError(text, false, { kind: 'http-status', status: status ?? 403 });
  const retryable = transientCodes.has(code) || (status !== undefined && isRetryableStatus(status));
  const retryAfterMs = retryAfterOf(failure.$response?.headers?.['retry-after']);
  return new EffectError(text, retryable, { kind: 'http-status', status, retryAfterMs });
};

/**
 * The EffectError for `cause`, thrown by the SDK (or a body stream) while serving `request`. A missing key of a
 * listed object, a failed If-Match or a range past its new end mean it changed meanwhile: retryable `changed`;
 * other answers by their code (serviceError). No answer at all goes through `transportError`; no credentials
 * anywhere is a permanent `refused`. The message quotes the service's code and message, never a header or a key.
 */
export const s3Error = (cause: unknown, request: S3Request): EffectError => {
  if (cause instanceof EffectError) return cause;
  if (request.signal.aborted || isAbortError(cause)) {
    return transportError(cause, { what: request.what, aborted: true });
  }
  if (isServiceFailure(cause) && cause.$metadata.httpStatusCode !== undefined)
    return serviceError(cause, request);
  const name = (cause as { name?: unknown } | null)?.name;
  if (name === 'CredentialsProviderError') {
    return new EffectError(
      `${request.what}: no AWS credentials found (environment, shared files, web identity, container or ` +
        'instance role); a public bucket needs --s3-anonymous',
      false,
      { kind: 'refused' },
    );
  }
  if (name === 'TimeoutError') {
    return transportError(cause, { what: request.what, aborted: false, timeout: 'timed out' });
  }
  return transportError(cause, {
    what: request.what,
    aborted: false,
    connectionLost: request.inBody === true,
  });
};

/** The retryable `changed` failure of a read whose answer belongs to another version of the object. */
export const changedObject = (what: string, why: string): EffectError =>
  retryableError('changed', `${what}: ${why}; it changed since it was listed`);
