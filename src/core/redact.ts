/**
 * Redaction: the one place that decides what of a text or value may be shown (logs, statuses, errors, metrics).
 * `registerSecret(value)` hides a value everywhere from then on; `redact(textOrValue)` hides registered values,
 * the credentials of URLs and the known shapes of secrets.
 */

import { minSecretLength, RegisteredValues } from './registered-values';

export { minSecretLength };

export const redactedMark = '[REDACTED]';

/** Whether `url` carries user info (`user:password@`): refused wherever a URL is taken, since it would be sent and shown. */
export const hasUserInfo = (url: URL): boolean => url.username !== '' || url.password !== '';

/**
 * `uri` without user info, query and fragment, for messages and logs: signed URLs (S3 presigned, Azure SAS)
 * carry their credentials there. Scheme-less text (`user:pw@host/x`) loses what precedes an `@` in its first
 * segment too.
 */
export const redactUri = (uri: string): string => {
  const scheme = /^[a-z][a-z\d+.-]*:\/\//i.exec(uri)?.[0] ?? '';
  return scheme + withoutUserInfo(uri.slice(scheme.length)).replace(/[?#].*$/s, '');
};

/**
 * The authority ends at the first `/`, `\`, `?` or `#`; what precedes its last `@` is user info. An authority
 * that is no `host[:port]` (a raw `/`, `?` or `#` in a password cut it short) means user info up to the first
 * `@` anywhere: a password must not show just because it was not percent-encoded.
 */
const withoutUserInfo = (rest: string): string => {
  const authorityEnd = rest.search(/[/\\?#]/);
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd);
  const lastAt = authority.lastIndexOf('@');
  if (lastAt !== -1) return rest.slice(lastAt + 1);
  const firstAt = rest.indexOf('@');
  return firstAt !== -1 && !/^(\[[^\]]*\]|[^:]*)(:\d*)?$/.test(authority) ? rest.slice(firstAt + 1) : rest;
};

/**
 * A kind of text that holds a secret: what finds it, what it becomes, and a cheaper pattern that every match of
 * `pattern` contains (so a text without any trigger is known clean after one quick scan: most log lines).
 */
interface SecretShape {
  readonly pattern: string;
  readonly trigger: string;
  readonly hide: (match: string) => string;
}

const hideAll = (): string => redactedMark;
/** Keeps the name and separator of `name=value` / `name: value`, hides the value. */
const hideValue = (match: string): string =>
  match.replace(/^([^=:]*[=:]\s*["']?)[\s\S]*$/, `$1${redactedMark}`);

// Query parameters and connection-string keys whose value is a credential (S3, GCS, Azure, OAuth, generic).
const secretParameters =
  'x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|' +
  'sig|signature|accountkey|sharedaccesskey|sharedaccesssignature|access_token|id_token|' +
  'refresh_token|token|password|passwd|pwd|secret|client_secret|api_key|apikey|private_key';
const secretHeaders = 'authorization|proxy-authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie';
const awsKeyPrefixes = 'AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA';
// Nothing that already is the mark: redacting twice must change nothing (the log guard relies on it). A backslash
// only with what follows it: in JSON text (a /status page, /metrics) `\"` is a quote inside the string, and a value
// cut before its `"` leaves a `\` that escaped the string's own end (a model named `token=a"b` broke the page).
const value = String.raw`(?!\[REDACTED\])(?:[^\s&;"'<>,\\]|\\[^\s&;"'<>,])+`;
// What runs to a delimiter (a PEM's END, XML's `<`): never past a quote that ends a JSON string or a label value
// (one followed by `,` `}` `]` `:` or the end), escapes taken whole. Other quotes go on: a canonical request S3
// echoes holds `if-match:"<etag>"` before the security token's line.
const inString = String.raw`(?:[^"\\]|\\[\s\S]|"(?![,}\]:]|$))`;

/**
 * The known shapes, in the order they are tried at each position. Each pattern stops at whitespace, quotes and
 * `<>`, so a match stays inside one quoted string or JSON value.
 */
const shapes: ReadonlyArray<SecretShape> = [
  // A URL whose user info, query or fragment may hold a credential (any scheme: http(s), s3, gs, file, ...).
  {
    pattern: String.raw`\b[a-z][a-z\d+.-]*:\/\/[^\s"'<>@?#]*[@?#][^\s"'<>]*`,
    trigger: String.raw`:\/\/[^\s"'<>]*[@?#]`,
    hide: redactUri,
  },
  { pattern: String.raw`\bbearer\s+[\w\-.~+/]+=*`, trigger: 'bearer', hide: () => `Bearer ${redactedMark}` },
  // Basic credentials are base64: a word without digits or +/= after `Basic` is prose ("Basic authentication").
  {
    pattern: String.raw`\bbasic\s+[a-z\d+/]{6,}={0,2}`,
    trigger: 'basic',
    hide: (match) => (/[\d+/=]|\s\S+[A-Z]/.test(match) ? `Basic ${redactedMark}` : match),
  },
  {
    pattern: String.raw`\b(?:${secretHeaders})["']?\s*:\s*["']?(?:(?:bearer|basic|token|digest)\s+)?${value}`,
    trigger: 'authorization|api-key|auth-token|cookie',
    hide: hideValue,
  },
  { pattern: String.raw`(?<![\w-])(?:${secretParameters})=${value}`, trigger: '=', hide: hideValue },
  // AWS access key ids (AKIA… long-term, ASIA… temporary, and the other IAM unique-id prefixes).
  {
    pattern: String.raw`\b(?:${awsKeyPrefixes})[A-Z\d]{16}\b`,
    trigger: awsKeyPrefixes,
    hide: hideAll,
  },
  // JSON web tokens (Kubernetes service-account tokens, OIDC).
  { pattern: String.raw`\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*`, trigger: 'eyJ', hide: hideAll },
  // EKS's bearer token: a presigned STS request, base64url (aws-iam-authenticator, `aws eks get-token`).
  { pattern: String.raw`\bk8s-aws-v1\.[\w-]{8,}`, trigger: String.raw`k8s-aws-v1\.`, hide: hideAll },
  {
    pattern: String.raw`-----BEGIN [A-Z ]*PRIVATE KEY-----${inString}*?(?:-----END [A-Z ]*PRIVATE KEY-----|(?="[,}\]:]|"$)|$)`,
    trigger: 'PRIVATE KEY',
    hide: hideAll,
  },
  // What S3 echoes in a SignatureDoesNotMatch error body.
  {
    pattern: String.raw`<(?:SignatureProvided|Signature|StringToSign|StringToSignBytes|CanonicalRequest|AWSAccessKeyId)>(?:(?!<)${inString})*`,
    trigger: '<',
    hide: (match) => `${match.slice(0, match.indexOf('>') + 1)}${redactedMark}`,
  },
];

/**
 * The texts that hide `secret`: as it is, trimmed, and the credentials alone of a `<scheme> <credentials>` value,
 * each as it is, JSON-escaped and URL-encoded; none shorter than `minSecretLength`.
 */
const formsOf = (secret: string): string[] => {
  const credentials = /^[A-Za-z]+\s+(\S+)$/.exec(secret.trim())?.[1];
  return [secret, secret.trim(), ...(credentials === undefined ? [] : [credentials])]
    .filter((text) => text.length >= minSecretLength)
    .flatMap((text) => [text, JSON.stringify(text).slice(1, -1), encodeURIComponent(text)]);
};

const maxDepth = 64;

/** The known shapes as one pattern (group `s<i>` = shape i), and the cheaper one every match of it contains. */
const shapesPattern = new RegExp(shapes.map((shape, i) => `(?<s${i}>${shape.pattern})`).join('|'), 'gi');
const shapesTrigger = new RegExp(shapes.map((shape) => shape.trigger).join('|'), 'i');

/**
 * Registered secret values and the known shapes. The values' index is rebuilt when a secret is registered (at
 * start-up, when a token file is re-read, for each SAS a storage URI brings) and shared by every redaction until
 * then.
 */
export class SecretRegistry {
  private readonly values = new Set<string>();
  // Per rotating source (a key file re-read), the forms of its last distinct reads, oldest first.
  private readonly rotating = new Map<string, ReadonlyArray<ReadonlySet<string>>>();
  private compiled: RegisteredValues | undefined;

  /**
   * Hides `secret` in everything redacted from now on: as it is, JSON-escaped and URL-encoded, and the
   * credentials alone of a `<scheme> <credentials>` header value (`Bearer abc` hides `abc` too). Values
   * shorter than `minSecretLength` are ignored.
   */
  register(secret: string): void {
    for (const form of formsOf(secret)) {
      if (!this.values.has(form)) {
        this.values.add(form);
        // Added to the index there is: one per registration, never all of them again (a SAS per model).
        this.compiled?.add(form);
      }
    }
  }

  /**
   * Hides `current`, what `source` (a key file re-read as its keys rotate) holds now, like `register`; the secrets
   * of its distinct reads before the last `keptReads` are hidden no more unless registered otherwise: a call still
   * under way may echo a key just rotated out, but a source rotating for months must not grow the pattern every
   * log line runs through.
   */
  registerRotating(source: string, current: ReadonlyArray<string>, keptReads = 4): void {
    const forms = new Set(current.flatMap(formsOf));
    const reads = this.rotating.get(source) ?? [];
    const last = reads.at(-1);
    if (last !== undefined && last.size === forms.size && [...forms].every((form) => last.has(form))) return;
    this.rotating.set(source, [...reads, forms].slice(-keptReads));
    this.compiled = undefined;
  }

  /**
   * `text` with every registered secret, URL credential and known secret shape hidden, leftmost first (a registered
   * value first of two that start at one place), and a registered value in what a shape shows too (a URL's path).
   */
  redactText(text: string): string {
    const values = this.compile();
    let shown = '';
    let from = 0;
    let value = values.nextIn(text, 0);
    for (;;) {
      shapesPattern.lastIndex = from;
      const shape = shapesPattern.exec(text);
      // The leftmost of the two; a registered value before a shape that starts where it does.
      if (value !== undefined && (shape === null || value.index <= shape.index)) {
        shown += text.slice(from, value.index) + redactedMark;
        from = value.index + value.length;
      } else if (shape !== null) {
        const groups = shape.groups ?? {};
        const hide = shapes.find((_, i) => groups[`s${i}`] !== undefined)!.hide;
        // What the shape shows (a URL's path) still hides a registered value.
        shown += text.slice(from, shape.index) + values.hiddenIn(hide(shape[0]), redactedMark);
        from = shape.index + shape[0].length;
      } else return from === 0 ? text : shown + text.slice(from);
      if (value !== undefined && value.index < from) value = values.nextIn(text, from);
    }
  }

  /** False when `text` holds nothing redactText would hide; true when it may (a quick scan for the triggers). */
  mayHoldSecret(text: string): boolean {
    const values = this.compile();
    return shapesTrigger.test(text) || values.nextIn(text, 0) !== undefined;
  }

  /**
   * `value` with every string in it (object keys too) through `redactText`: strings, arrays, plain objects and
   * Errors (a copy with the same prototype; message, stack and cause redacted). Other values are returned as
   * they are; beyond `maxDepth` levels a value is replaced by a note.
   */
  redact<T>(value: T): T {
    return this.redactDeep(value, 0) as T;
  }

  private redactDeep(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.redactText(value);
    if (typeof value !== 'object' || value === null) return value;
    if (depth >= maxDepth) return `[more than ${maxDepth} levels deep: not shown]`;
    if (Array.isArray(value)) return value.map((item) => this.redactDeep(item, depth + 1));
    const prototype = Object.getPrototypeOf(value) as object | null;
    const isError = value instanceof Error;
    if (!isError && prototype !== Object.prototype && prototype !== null) return value;
    const copy = Object.create(prototype) as Record<string, unknown>;
    const keys = isError ? ['message', 'stack', 'cause', ...Object.keys(value)] : Object.keys(value);
    for (const key of new Set(keys)) {
      const field = (value as Record<string, unknown>)[key];
      if (field !== undefined) copy[this.redactText(key)] = this.redactDeep(field, depth + 1);
    }
    return copy;
  }

  private compile(): RegisteredValues {
    if (this.compiled !== undefined) return this.compiled;
    const rotated = [...this.rotating.values()].flatMap((reads) => reads.flatMap((forms) => [...forms]));
    this.compiled = new RegisteredValues(new Set([...this.values, ...rotated]));
    return this.compiled;
  }
}

/**
 * The process's secrets. One registry, not one per logger or per edge: a secret read anywhere (a header from
 * the environment, a token file, a cloud key) must be hidden everywhere, including in loggers and status
 * documents built later, so no call site can forget to pass it on.
 */
export const secrets = new SecretRegistry();

/** Hides `secret` (a header value, a token, a key) in every log line, status and error from now on. */
export const registerSecret = (secret: string): void => secrets.register(secret);

/** Hides the secrets `source` (a key file re-read as its keys rotate) holds now, and those of its last few reads. */
export const registerRotatingSecrets = (source: string, current: ReadonlyArray<string>): void =>
  secrets.registerRotating(source, current);

/** `value` (a text, or arrays, plain objects, Errors) with every secret hidden: for anything shown. */
export const redact = <T>(value: T): T => secrets.redact(value);

/**
 * One JSON log line (pino's output) with every string in it redacted, still one valid JSON line; a line with
 * nothing to hide is returned as it is, without being parsed. A line that is not JSON is redacted as text.
 */
export const redactLogLine = (line: string): string => {
  if (!secrets.mayHoldSecret(line)) return line;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return secrets.redactText(line);
  }
  return `${JSON.stringify(secrets.redact(parsed))}${line.endsWith('\n') ? '\n' : ''}`;
};
