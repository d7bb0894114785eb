/** Expected failures of reading and decoding the config, as values (never thrown). */

/** models.json could not be read (missing, not a file, no permission). */
export interface ReadFailed {
  readonly _tag: 'ReadFailed';
  readonly file: string;
  readonly code: string;
  readonly reason: string;
}
/** models.json is empty or not JSON (often an in-place write caught half-way). */
export interface InvalidJson {
  readonly _tag: 'InvalidJson';
  readonly file: string;
  readonly reason: string;
}
/** models.json is JSON but not a valid model list; each error names the field path. */
export interface InvalidConfig {
  readonly _tag: 'InvalidConfig';
  readonly file: string;
  readonly errors: ReadonlyArray<string>;
}
export type ConfigError = ReadFailed | InvalidJson | InvalidConfig;

export const readFailed = (file: string, code: string, reason: string): ConfigError => ({
  _tag: 'ReadFailed',
  file,
  code,
  reason,
});
export const invalidJson = (file: string, reason: string): ConfigError => ({
  _tag: 'InvalidJson',
  file,
  reason,
});
export const invalidConfig = (file: string, errors: ReadonlyArray<string>): ConfigError => ({
  _tag: 'InvalidConfig',
  file,
  errors,
});

/** One human sentence for a config error, naming the file and the fields. */
export const describeConfigError = (error: ConfigError): string => {
  switch (error._tag) {
    case 'ReadFailed':
      return `cannot read ${error.file}: ${error.reason}`;
    case 'InvalidJson':
      return `${error.file} is not valid JSON: ${error.reason}`;
    case 'InvalidConfig':
      return `${error.file} is not a valid model list: ${error.errors.join('; ')}`;
  }
};

/**
 * What kind of failure an effect met, for metrics, `/status` and tests to match on (never a regex over prose).
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
  | 'too-large'
  | 'unknown';

/**
 * Why an effect (download, load, unload) failed. `retryable` failures (connection errors, timeouts, 5xx, 429)
 * are retried with backoff; the others (404, other 4xx, a bad URI) fail the model until its spec changes.
 * `kind` says what failed; `status` is the HTTP status of an `http-status` failure.
 */
export class EffectError extends Error {
  override readonly name = 'EffectError';
  readonly kind: EffectErrorKind;
  readonly status: number | undefined;
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown; kind?: EffectErrorKind; status?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.kind = options?.kind ?? 'unknown';
    this.status = options?.status;
  }
}

export const permanentError = (message: string, cause?: unknown): EffectError =>
  new EffectError(message, false, { cause });
export const retryableError = (message: string, cause?: unknown): EffectError =>
  new EffectError(message, true, { cause });

/** An HTTP status as an EffectError: 408, 425, 429 and 5xx are worth retrying, other statuses are not. */
export const httpStatusError = (what: string, status: number, body = ''): EffectError => {
  const detail = body.trim().slice(0, 300);
  const message = `${what} returned HTTP ${status}${detail ? `: ${detail}` : ''}`;
  return new EffectError(message, status >= 500 || status === 408 || status === 425 || status === 429, {
    kind: 'http-status',
    status,
  });
};

// Duck-typed, not `instanceof Error`: errors from node built-ins can come from another realm (jest's vm).
const fieldOf = (cause: unknown, field: 'code' | 'message'): unknown =>
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

/** Unknown failures (a bug, a network error no edge classified) count as retryable: a retry is the safe default. */
export const toEffectError = (cause: unknown): EffectError =>
  cause instanceof EffectError ? cause : new EffectError(errorMessage(cause), true, { cause });
