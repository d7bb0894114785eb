/** Expected failures of reading and decoding the config, as values (never thrown); and EffectError. */
import { redact } from './redact';

/**
 * models.json could not be read: missing, not a regular file (a FIFO, a socket, a dir), a dangling link, `..data`
 * dangling or pointing outside the config dir, no permission, a read that hung. `code` is the errno name
 * (`ENOENT`, `EACCES`) or one of modelsync's: `ENOTREG` (not a regular file), `EOUTSIDE` (`..data` leads out of
 * the config dir), `ETIMEDOUT` (the read hung), `EINVAL` (a ConfigMap holding a value of the wrong type), `EFBIG` (a
 * ConfigMap version whose answer is over the cap), `EKUBEAPI` (no list has succeeded yet); `reason` says it in words.
 */
export const readFailed = (file: string, code: string, reason: string) =>
  ({ _tag: 'ReadFailed', file, code, reason }) as const;

/** A cap on the bytes of a config, and the setting that sets it, as its user knows it (the flag's name). */
export interface ByteLimit {
  readonly maxBytes: number;
  readonly limit: string;
}

/** models.json is over `maxBytes` (`--max-config-bytes`): refused unread; `limit` says what lifts the cap. */
export const tooLarge = (file: string, bytes: number, { maxBytes, limit }: ByteLimit) =>
  ({ _tag: 'TooLarge', file, bytes, maxBytes, limit }) as const;

/** models.json is not UTF-8 text: `found` says what it is instead (`UTF-16 little-endian text`). */
export const invalidEncoding = (file: string, found: string) =>
  ({ _tag: 'InvalidEncoding', file, found }) as const;

/** models.json is empty or not JSON (often an in-place write caught half-way). */
export const invalidJson = (file: string, reason: string) => ({ _tag: 'InvalidJson', file, reason }) as const;

/** models.json is JSON but not a valid model list; each error names the field path. */
export const invalidConfig = (file: string, errors: ReadonlyArray<string>) =>
  ({ _tag: 'InvalidConfig', file, errors }) as const;

/** Why a config was not taken: what the constructors above make. */
export type ConfigError = ReturnType<
  typeof readFailed | typeof tooLarge | typeof invalidEncoding | typeof invalidJson | typeof invalidConfig
>;

/** One human sentence for a config error, naming the file and the fields. */
export const describeConfigError = (error: ConfigError): string => {
  switch (error._tag) {
    case 'ReadFailed':
      return `cannot read ${error.file}: ${error.reason}`;
    case 'TooLarge':
      return (
        `${error.file} is ${error.bytes} bytes, over the limit of ${error.maxBytes} bytes ` +
        `(${error.limit}); it was not read`
      );
    case 'InvalidEncoding':
      return `${error.file} is ${error.found}; models.json must be UTF-8: save it as UTF-8`;
    case 'InvalidJson':
      return `${error.file} is not valid JSON: ${error.reason}`;
    case 'InvalidConfig':
      return `${error.file} is not a valid model list: ${error.errors.join('; ')}`;
  }
};

/**
 * What kind of failure an effect met, for metrics, `/status` and tests to match on (never a regex over prose).
 * `changed` is an object that moved while it was being read (its ETag or generation differs): retry from 0.
 * `no-space` is a download that would not fit on the model volume with `--min-free-bytes` kept free.
 * `invalid-setting` is a setting of modelsync's read at the call that cannot be used (a TorchServe token file whose
 * token holds whitespace): no verdict on the model, so the resync retries a model it failed once the setting is fixed.
 * `unknown` is what nothing classified (a bug, or an error no edge recognised).
 */
export type EffectErrorKind =
  | 'http-status'
  | 'timeout'
  | 'network'
  | 'aborted'
  | 'invalid-archive'
  | 'invalid-response'
  | 'filesystem'
  | 'invalid-uri'
  | 'unsupported-scheme'
  | 'not-found'
  | 'refused'
  | 'invalid-setting'
  | 'too-large'
  | 'no-space'
  | 'changed'
  | 'unknown';

/**
 * Why an effect (download, load, unload) failed. `retryable` failures (connection errors, timeouts, 5xx, 429)
 * are retried with backoff; the others (404, other 4xx, a bad URI) fail the model until its spec changes.
 * `kind` says what failed; `status` is the HTTP status of an `http-status` failure. The message is redacted
 * (`redact`): it quotes libraries and servers, which quote URLs and headers; the `cause` is kept as it was.
 */
export class EffectError extends Error {
  override readonly name = 'EffectError';
  readonly kind: EffectErrorKind;
  readonly status: number | undefined;
  /** How long the server asked us to wait before asking again (its Retry-After), in ms. */
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    readonly retryable: boolean,
    options: {
      readonly kind: EffectErrorKind;
      readonly status?: number | undefined;
      readonly cause?: unknown;
      readonly retryAfterMs?: number | undefined;
    },
  ) {
    super(redact(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = options.kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A failure that will recur until the spec (or the world outside) changes. */
export const permanentError = (kind: EffectErrorKind, message: string, cause?: unknown): EffectError =>
  new EffectError(message, false, { kind, cause });
/** A failure that may pass: the loader retries it with backoff. */
export const retryableError = (kind: EffectErrorKind, message: string, cause?: unknown): EffectError =>
  new EffectError(message, true, { kind, cause });

/** The one rule for HTTP statuses: 408, 425, 429 and 5xx are worth retrying, other statuses are not. */
export const isRetryableStatus = (status: number): boolean =>
  status >= 500 || status === 408 || status === 425 || status === 429;

/**
 * An HTTP status as an `http-status` EffectError, retryable by isRetryableStatus, its message ending in `body`;
 * `retryAfterMs`: the wait its Retry-After asked for (retryAfterOf).
 */
export const httpStatusError = (
  what: string,
  status: number,
  body = '',
  retryAfterMs?: number,
): EffectError => {
  const detail = body.trim().slice(0, 300);
  const message = `${what} returned HTTP ${status}${detail ? `: ${detail}` : ''}`;
  return new EffectError(message, isRetryableStatus(status), { kind: 'http-status', status, retryAfterMs });
};

/**
 * A Retry-After header's wait in ms: delay-seconds or an HTTP date (RFC 9110, 10.2.3); undefined for none, or one
 * that is not either. A date in the past is 0.
 */
export const retryAfterOf = (header: string | undefined, now = Date.now()): number | undefined => {
  const text = header?.trim();
  if (text === undefined || text === '') return undefined;
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) || !/[a-z]/i.test(text) ? undefined : Math.max(0, at - now);
};

// Duck-typed, not `instanceof Error`: errors from node built-ins can come from another realm (jest's vm).
const fieldOf = (cause: unknown, field: 'code' | 'message' | 'name'): unknown =>
  typeof cause === 'object' && cause !== null ? (cause as Record<string, unknown>)[field] : undefined;

/** The errno-style `code` of an error (`ENOENT`, ...), if it has one. */
export const errorCode = (cause: unknown): string | undefined => {
  const code = fieldOf(cause, 'code');
  return typeof code === 'string' ? code : undefined;
};

/** The message of an error, or the value as text. */
export const errorMessage = (cause: unknown): string => {
  const message = fieldOf(cause, 'message');
  return typeof message === 'string' ? message : String(cause);
};

/** True for the error an aborted AbortSignal throws (`signal.throwIfAborted()`, fetch, stream pipelines). */
export const isAbortError = (cause: unknown): boolean => fieldOf(cause, 'name') === 'AbortError';

/**
 * Any failure as an EffectError: an abort is `aborted`; anything no edge classified (a bug) is `unknown`. Both
 * count as retryable: a retry is the safe default.
 */
export const toEffectError = (cause: unknown): EffectError => {
  if (cause instanceof EffectError) return cause;
  return retryableError(isAbortError(cause) ? 'aborted' : 'unknown', errorMessage(cause), cause);
};
