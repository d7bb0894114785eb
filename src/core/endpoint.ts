/** Endpoints: what a credential is bound to (scheme, host, port), and the one comparison every provider uses. */

/** A URL's scheme, host and effective port: where a request goes, and so what may hear its credentials. */
export interface Endpoint {
  /** `http` or `https` (lower-case, no colon). */
  readonly scheme: string;
  /** See hostKey: lower-case, no trailing dot, IPv6 in brackets. */
  readonly host: string;
  /** The port the connection is made to: the scheme's default when the URL names none. */
  readonly port: number;
}

const defaultPorts: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * A host name as credentials are keyed by it: lower-case and without a trailing dot, so `Example.COM.` is
 * `example.com` (the same DNS name). Nothing else is folded: an IP address and a name that resolves to it are two
 * hosts (`127.0.0.1` is not `localhost`), and a subdomain is another host.
 */
export const hostKey = (hostname: string): string => hostname.toLowerCase().replace(/\.+$/, '');

/** The endpoint of `url` (a URL or its text); undefined when it does not parse or names no host. */
export const endpointOf = (url: URL | string): Endpoint | undefined => {
  const parsed = typeof url === 'string' ? URL.parse(url) : url;
  if (parsed === null) return undefined;
  const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
  const host = hostKey(parsed.hostname);
  if (host === '') return undefined;
  const port = parsed.port === '' ? defaultPorts[scheme] : Number(parsed.port);
  return port === undefined ? undefined : { scheme, host, port };
};

/**
 * True when `a` and `b` are the same endpoint: same scheme, host (see hostKey) and port. The one test a
 * credential passes before it goes with a request: a redirect, or a URI, anywhere else gets none of it (an
 * https → http hop on the same host, another port of the same host, another name for the same address).
 */
export const sameEndpoint = (a: URL | string, b: URL | string): boolean => {
  const first = endpointOf(a);
  const second = endpointOf(b);
  return (
    first !== undefined &&
    second !== undefined &&
    first.scheme === second.scheme &&
    first.host === second.host &&
    first.port === second.port
  );
};
