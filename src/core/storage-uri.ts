/** Storage URIs and per-host HTTP headers: parsing with KServe's error messages, no I/O; header values are secrets. */
import type { Env } from './env';
import * as E from 'fp-ts/Either';
import { hostKey } from './endpoint';
import { parseJson } from './json/json';
import { isJsonObject } from './json/json-object';
import { redactUri, registerSecret } from './redact';

// Shown from here too: whoever parses a storage URI also shows one.
export { redactUri } from './redact';

/** A storage URI and its lower-case scheme (`file` for absolute local paths). */
export interface StorageUri {
  readonly scheme: string;
  readonly uri: string;
}

// Anchored, unlike KServe's `\w+?://`: text before the scheme (" s3://x") is a typo, not a protocol.
const schemePattern = /^(\w+):\/\//;

/**
 * Finds the scheme of `uri`. Absolute paths mean `file`. Which schemes are supported is the router's
 * business; schemes are lower-cased because RFC 3986 makes them case-insensitive (KServe rejected `S3://`).
 */
export const parseStorageUri = (uri: string): E.Either<string, StorageUri> => {
  if (uri.length === 0) return E.left('there is no storageUri supplied');
  if (uri.startsWith('/')) return E.right({ scheme: 'file', uri });
  const match = schemePattern.exec(uri);
  return match?.[1] === undefined
    ? E.left(`there is no protocol specified for the storageUri ${redactUri(uri)}`)
    : E.right({ scheme: match[1].toLowerCase(), uri });
};

const headersSuffix = '-headers';
// RFC 9110 token characters; values must not smuggle a new header line.
export const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const tokenSymbols = "!#$%&'*+-.^_`|~";
const badHeaderValuePattern = /[\r\n\0]/;

const headersOf = (variable: string, text: string): E.Either<string, Readonly<Record<string, string>>> => {
  // Never quote the value or JSON.parse's message (which quotes it): it usually holds a token.
  const json = parseJson(text);
  if (E.isLeft(json)) {
    const what = json.left._tag === 'Blank' ? 'empty' : 'not valid JSON';
    return E.left(`${variable} is ${what}: expected a JSON object of header names to string values`);
  }
  if (!isJsonObject(json.right))
    return E.left(`${variable} must be a JSON object of header names to string values`);
  const headers: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(json.right)) {
    // A name is quoted only once it is known to be a header name, never a token pasted in the wrong place.
    if (!headerNamePattern.test(name))
      return E.left(`${variable}: a header name is not an HTTP token (letters, digits, ${tokenSymbols})`);
    if (typeof headerValue !== 'string')
      return E.left(`${variable}: the value of header ${name} must be a string`);
    // Header values are how tokens reach storage: hidden in every log line and message from now on.
    registerSecret(headerValue);
    if (badHeaderValuePattern.test(headerValue)) {
      return E.left(`${variable}: the value of header ${name} must not contain CR, LF or NUL`);
    }
    headers[name] = headerValue;
  }
  return E.right(headers);
};

/**
 * The key of a `<host>-headers` variable's host, as hostKey(url.hostname) gives it for the URLs it is for: an IPv6
 * address, which KServe names as Python's `url.hostname` and Go's `Hostname()` give it (`::1-headers`, no brackets),
 * takes the bracketed short form of a URL's hostname (`[::1]`), whichever way it is written.
 */
const headersHostKey = (host: string): string => {
  const address = /^\[(.*)\]$/.exec(host)?.[1] ?? host;
  if (!address.includes(':')) return hostKey(host);
  return URL.parse(`http://[${address}]/`)?.hostname ?? hostKey(host);
};

/**
 * KServe's extra HTTP headers per host: env var `<hostname>-headers` = JSON object of string values, e.g.
 * `models.example.com-headers={"Authorization":"Bearer x"}`. Keys of the result are host names as hostKey makes
 * them (lower-case, no trailing dot). The headers go to that host at the scheme and port a storage URI names, and
 * never through a redirect elsewhere (httpStorage). The first malformed variable is the Left, named.
 */
export const parseHostHeaders = (
  env: Env,
): E.Either<string, ReadonlyMap<string, Readonly<Record<string, string>>>> => {
  const byHost = new Map<string, Readonly<Record<string, string>>>();
  for (const [variable, text] of Object.entries(env)) {
    if (text === undefined || !variable.endsWith(headersSuffix)) continue;
    const host = headersHostKey(variable.slice(0, -headersSuffix.length));
    if (host.length === 0) return E.left(`${variable} does not name a host: use <hostname>${headersSuffix}`);
    const headers = headersOf(variable, text);
    if (E.isLeft(headers)) return headers;
    byHost.set(host, headers.right);
  }
  return E.right(byHost);
};
