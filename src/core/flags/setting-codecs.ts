/** The codecs of single settings (flag or env var text to a value); each failure message quotes the bad value. */
import * as t from 'io-ts';
import { parseQuantity } from '../quantity';
import { hasUserInfo } from '../redact';

/**
 * A setting's codec: `is` tells a decoded value, `decode` reads one from the text (or passes a value through) or
 * gives undefined, and the failure says `<expected>, got <the text>`.
 */
export const settingCodec = <A>(
  name: string,
  is: (u: unknown) => u is A,
  decode: (u: unknown) => A | undefined,
  expected: string,
  encode: (a: A) => string = String,
) =>
  new t.Type<A, string, unknown>(
    name,
    is,
    (u, context) => {
      const value = decode(u);
      return value !== undefined
        ? t.success(value)
        : t.failure(u, context, `${expected}, got ${JSON.stringify(u)}`);
    },
    encode,
  );

/** A setting's codec that takes a value as it is when `is` holds. */
export const checkedCodec = <A>(name: string, is: (u: unknown) => u is A, expected: string) =>
  settingCodec(name, is, (u) => (is(u) ? u : undefined), expected);

const isIntegerIn =
  (min: number, max: number) =>
  (u: unknown): u is number =>
    typeof u === 'number' && Number.isSafeInteger(u) && u >= min && u <= max;

/** A whole number from `min` to `max`, from a number or its decimal text. */
export const integerIn = (name: string, min: number, max: number) =>
  settingCodec(
    name,
    isIntegerIn(min, max),
    (u) => {
      const n = typeof u === 'number' ? u : typeof u === 'string' && /^\s*\d+\s*$/.test(u) ? Number(u) : NaN;
      return isIntegerIn(min, max)(n) ? n : undefined;
    },
    `expected a whole number from ${min} to ${max}`,
  );

/** A choice of `values`, spelled exactly: a flag entry's codec and the choices `--help` lists. */
export const choiceOf = <T extends string>(name: string, values: ReadonlyArray<T>) => {
  const is = (u: unknown): u is T => typeof u === 'string' && (values as ReadonlyArray<string>).includes(u);
  return { codec: checkedCodec(name, is, `expected one of ${values.join(', ')}`), choices: values };
};

/** Any text but the empty one. */
export const nonEmpty = new t.Type<string, string, unknown>(
  'NonEmptyString',
  (u): u is string => typeof u === 'string' && u.length > 0,
  (u, context) =>
    typeof u === 'string' && u.length > 0 ? t.success(u) : t.failure(u, context, 'must not be empty'),
  String,
);

const hostPattern =
  /^([0-9a-f]*:[0-9a-f:.]*|[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*)$/i;

/** An address to bind: an IPv4 or IPv6 address (no brackets) or a host name. */
export const hostAddress = checkedCodec(
  'HostAddress',
  (u): u is string => typeof u === 'string' && hostPattern.test(u),
  'expected an IP address or a host name',
);

/**
 * A Kubernetes object name of at most `maxLength` characters: lower-case letters, digits and `-` (and `.` unless
 * `label`: a namespace is a DNS label), starting and ending with a letter or digit.
 */
export const kubeName = (name: string, maxLength: number, label = false) => {
  const pattern = label ? /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/ : /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
  return settingCodec(
    name,
    (u): u is string => typeof u === 'string',
    (u) => (typeof u === 'string' && u.length <= maxLength && pattern.test(u) ? u : undefined),
    `expected a Kubernetes name (lower-case letters, digits, '-'${label ? '' : " and '.'"}, at most ${maxLength})`,
  );
};

/** An http(s) URL with a host; trailing slashes are dropped so paths can be appended. */
export const httpUrl = settingCodec(
  'HttpUrl',
  (u): u is string => typeof u === 'string',
  (u) =>
    typeof u === 'string' && /^https?:\/\/[^/]+/.test(u) && URL.canParse(u) && !hasUserInfo(new URL(u))
      ? u.replace(/\/+$/, '')
      : undefined,
  // A user:password in it is refused at every call (and would end in logs): refused here, not retried for ever.
  'expected an http(s) URL such as http://127.0.0.1:8080, with no user:password in it',
);

/**
 * A number of bytes from `min` to `max`: a whole number, or a Kubernetes-style quantity with a binary or
 * decimal suffix (`256Gi`, `64Ki`, `10M`) that comes out whole.
 */
export const byteCount = (name: string, min: number, max: number) =>
  settingCodec(
    name,
    isIntegerIn(min, max),
    (u) => {
      const bytes = typeof u === 'number' ? u : typeof u === 'string' ? wholeBytesOf(u.trim()) : undefined;
      return isIntegerIn(min, max)(bytes) ? bytes : undefined;
    },
    `expected a number of bytes from ${min} to ${max} (suffixes Ki, Mi, Gi, Ti, k, M, G, T)`,
  );

const wholeBytesOf = (text: string): number | undefined => {
  const [numerator, denominator] = (parseQuantity(text)?.value ?? '').split('/');
  return denominator === '1' ? Number(numerator) : undefined;
};

/** A trimmed path without its trailing slashes (`/` kept). */
const cleanPath = (path: string): string => (path.trim() === '/' ? '/' : path.trim().replace(/\/+$/, ''));

/** One absolute path (trailing slashes dropped, `/` kept). */
export const absolutePath = (name: string) =>
  settingCodec(
    name,
    (u): u is string => typeof u === 'string' && u.startsWith('/'),
    (u) => (typeof u === 'string' && u.trim().startsWith('/') ? cleanPath(u) : undefined),
    'expected an absolute path',
  );

/**
 * A comma-separated list of absolute paths (spaces around commas ignored, trailing slashes dropped); the empty
 * text is the empty list.
 */
export const absolutePaths = (name: string) =>
  new t.Type<ReadonlyArray<string>, string, unknown>(
    name,
    (u): u is ReadonlyArray<string> => Array.isArray(u) && u.every((p) => typeof p === 'string'),
    (u, context) => {
      if (Array.isArray(u) && u.every((p) => typeof p === 'string' && p.startsWith('/'))) {
        return t.success(u as ReadonlyArray<string>);
      }
      if (typeof u !== 'string') return t.failure(u, context, `expected comma-separated absolute paths`);
      const paths = u
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      const relative = paths.find((p) => !p.startsWith('/'));
      return relative === undefined
        ? t.success(paths.map(cleanPath))
        : t.failure(u, context, `expected comma-separated absolute paths, got ${JSON.stringify(relative)}`);
    },
    (paths) => paths.join(','),
  );

const durationUnits: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration in milliseconds, from `min` to `max`: a whole number with a unit, `1500ms`, `20s`, `5m` or `1h`
 * (a bare number is refused, since nothing says whether it means seconds or milliseconds), or `0`.
 */
export const duration = (name: string, min: number, max: number) =>
  settingCodec(
    name,
    isIntegerIn(min, max),
    (u) => {
      const match = typeof u === 'string' ? /^\s*(\d+)(ms|s|m|h)?\s*$/.exec(u) : null;
      const ms =
        typeof u === 'number'
          ? u
          : match === null || (match[2] === undefined && match[1] !== '0')
            ? NaN
            : Number(match[1]) * durationUnits[match[2] ?? 'ms']!;
      return isIntegerIn(min, max)(ms) ? ms : undefined;
    },
    `expected a duration from ${min} ms to ${max / 1000} s such as 1500ms, 20s, 5m or 1h`,
    (ms) => `${ms}ms`,
  );
