/** The codecs of single settings (flag or env var text to a value); each failure message quotes the bad value. */
import * as t from 'io-ts';

/** A whole number from `min` to `max`, from a number or its decimal text. */
export const integerIn = (name: string, min: number, max: number) =>
  new t.Type<number, string, unknown>(
    name,
    (u): u is number => typeof u === 'number' && Number.isInteger(u) && u >= min && u <= max,
    (u, context) => {
      const n = typeof u === 'number' ? u : typeof u === 'string' && /^\s*\d+\s*$/.test(u) ? Number(u) : NaN;
      return Number.isInteger(n) && n >= min && n <= max
        ? t.success(n)
        : t.failure(u, context, `expected a whole number from ${min} to ${max}, got ${JSON.stringify(u)}`);
    },
    String,
  );

/** One of `values`, spelled exactly. */
export const oneOf = <T extends string>(name: string, values: ReadonlyArray<T>) =>
  new t.Type<T, string, unknown>(
    name,
    (u): u is T => typeof u === 'string' && (values as ReadonlyArray<string>).includes(u),
    (u, context) =>
      typeof u === 'string' && (values as ReadonlyArray<string>).includes(u)
        ? t.success(u as T)
        : t.failure(u, context, `expected one of ${values.join(', ')}, got ${JSON.stringify(u)}`),
    String,
  );

/** Any text but the empty one. */
export const nonEmpty = new t.Type<string, string, unknown>(
  'NonEmptyString',
  (u): u is string => typeof u === 'string' && u.length > 0,
  (u, context) =>
    typeof u === 'string' && u.length > 0 ? t.success(u) : t.failure(u, context, 'must not be empty'),
  String,
);

/** An http(s) URL with a host; trailing slashes are dropped so paths can be appended. */
export const httpUrl = new t.Type<string, string, unknown>(
  'HttpUrl',
  (u): u is string => typeof u === 'string',
  (u, context) => {
    if (typeof u === 'string' && /^https?:\/\/[^/]+/.test(u) && URL.canParse(u))
      return t.success(u.replace(/\/+$/, ''));
    return t.failure(
      u,
      context,
      `expected an http(s) URL such as http://127.0.0.1:8080, got ${JSON.stringify(u)}`,
    );
  },
  String,
);
