/** basicFromUserInfo: the `user:password@` of an http(s) storage URI as the Basic authorization KServe sends for it. */
import { hasUserInfo, registerSecret } from '../../core/redact';

/** A storage URI without its user info, and the `Authorization` header its user info stands for, if it had one. */
export interface UriCredentials {
  readonly uri: string;
  readonly authorization?: string;
}

/** A percent-decoded part of user info; one that is no valid encoding is taken as written, as Python's unquote does. */
const decoded = (part: string): string => {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
};

/**
 * `uri` without its `user:password@`, and `Basic base64(user:password)` (each part percent-decoded) for it: what
 * KServe's initializer (requests) and its agent (Go's client) send to that URI's server, and to no redirect target
 * (the caller sends it as it sends `<host>-headers`, to the URI's own endpoint alone). The password and the header's
 * value are registered as secrets when read. A URI that does not parse, or has no user info, is returned as it is.
 */
export const basicFromUserInfo = (uri: string): UriCredentials => {
  const url = URL.parse(uri);
  if (url === null || !hasUserInfo(url)) return { uri };
  const password = decoded(url.password);
  const token = Buffer.from(`${decoded(url.username)}:${password}`).toString('base64');
  for (const secret of [password, url.password, token]) registerSecret(secret);
  url.username = '';
  url.password = '';
  return { uri: url.href, authorization: `Basic ${token}` };
};

/** `headers` with `authorization` put in place of any header of that name in another case (requests' way: the URL's wins). */
export const withAuthorization = (
  headers: Readonly<Record<string, string>>,
  authorization: string | undefined,
): Readonly<Record<string, string>> =>
  authorization === undefined
    ? headers
    : {
        ...Object.fromEntries(
          Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'authorization'),
        ),
        authorization,
      };
