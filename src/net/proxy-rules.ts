/** proxyRules: which proxy, if any, a request to a URL goes through, by HTTP(S)_PROXY and NO_PROXY as curl reads them. */
import type { Env } from '../core/env';
import { BlockList, isIP } from 'node:net';
import { registerSecret } from '../core/redact';

/** The proxy variables of the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`), as text; absent = unset. */
export interface ProxySettings {
  /** Proxy for `http://` URLs. */
  readonly httpProxy?: string | undefined;
  /** Proxy for `https://` URLs (never HTTP_PROXY's: curl, Go and Python's requests agree). */
  readonly httpsProxy?: string | undefined;
  /** Hosts reached directly: `*`, or comma/space separated `host`, `.domain`, `*.domain`, `host:port`, IPs, CIDRs. */
  readonly noProxy?: string | undefined;
}

// curl, undici and Python's requests: the lower-case name wins over the upper-case one.
const variable = (env: Env, name: string): string | undefined =>
  (env[name.toLowerCase()] ?? env[name])?.trim() || undefined;

/** The proxy variables of `env`, lower-case names first (`https_proxy` over `HTTPS_PROXY`). */
export const proxySettingsFrom = (env: Env): ProxySettings => ({
  httpProxy: variable(env, 'HTTP_PROXY'),
  httpsProxy: variable(env, 'HTTPS_PROXY'),
  noProxy: variable(env, 'NO_PROXY'),
});

interface HostRule {
  /** Lower-case host name or IP without brackets; matches itself and, for names, its subdomains. */
  readonly host: string;
  /** 0: any port. */
  readonly port: number;
}

/** A parsed NO_PROXY: nothing, everything, or hosts, domains and address ranges. */
interface NoProxy {
  readonly all: boolean;
  readonly hosts: ReadonlyArray<HostRule>;
  readonly ranges: BlockList;
}

const defaultPorts: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/**
 * A host as rules and URLs are compared: lower-case, an IPv6 address in the short form a URL's hostname has
 * (`0:0:0:0:0:0:0:1` is `::1`), a name without its trailing dot (`example.com.`), as curl compares them.
 */
const comparable = (host: string): string => {
  const lower = host.toLowerCase();
  if (isIP(lower) === 6) return URL.parse(`http://[${lower}]/`)?.hostname.slice(1, -1) ?? lower;
  return isIP(lower) === 0 ? lower.replace(/\.$/, '') : lower;
};

const parseNoProxy = (text: string | undefined): NoProxy => {
  const hosts: HostRule[] = [];
  const ranges = new BlockList();
  let all = false;
  for (const entry of (text ?? '').split(/[,\s]+/)) {
    if (entry === '') continue;
    if (entry === '*') all = true;
    const cidr = /^([^/]+)\/(\d{1,3})$/.exec(entry);
    const family = cidr === null ? 0 : isIP(cidr[1]!);
    if (cidr !== null && family !== 0) {
      // A prefix no address has (`10.0.0.1/33`) names nothing, as Go, curl and requests read it: no refusal.
      const prefix = Number(cidr[2]);
      if (prefix <= (family === 6 ? 128 : 32))
        ranges.addSubnet(cidr[1]!, prefix, family === 6 ? 'ipv6' : 'ipv4');
      continue;
    }
    // `[::1]:8080`, `host:8080`, `::1` (a bare IPv6 address has colons but no port).
    const withPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    const host = (withPort?.[1] ?? entry).replace(/^\[|\]$/g, '');
    hosts.push({ host: comparable(host.replace(/^\*?\./, '')), port: Number(withPort?.[2] ?? 0) });
  }
  return { all, hosts, ranges };
};

const bypasses = (noProxy: NoProxy, url: URL): boolean => {
  if (noProxy.all) return true;
  const host = comparable(url.hostname.replace(/^\[|\]$/g, ''));
  const port = Number(url.port) || defaultPorts[url.protocol] || 0;
  const family = isIP(host);
  if (family !== 0 && noProxy.ranges.check(host, family === 6 ? 'ipv6' : 'ipv4')) return true;
  return noProxy.hosts.some(
    (rule) =>
      (rule.port === 0 || rule.port === port) &&
      (host === rule.host || (family === 0 && host.endsWith(`.${rule.host}`))),
  );
};

/** The proxy rules of one ProxySettings: `proxyFor(url)` is the proxy URL to use, or undefined for a direct one. */
export interface ProxyRules {
  proxyFor(url: URL): URL | undefined;
}

const proxyUrl = (text: string | undefined, name: string): URL | undefined => {
  if (text === undefined) return undefined;
  // curl takes a bare `host:port` as an http proxy.
  const url = URL.parse(/^[a-z][a-z\d+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  // Never quoted: a proxy URL may carry a password.
  if (url === null) throw new Error(`${name} is not a valid proxy URL`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${name} must be an http:// or https:// proxy URL, not ${url.protocol}`);
  let password: string;
  try {
    // The proxy agents decode both to send them (Basic auth): a stray % threw there, naming nothing.
    decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw new Error(`${name}: its user and password must be percent-encoded (a % as %25)`);
  }
  if (password !== '') registerSecret(password);
  return url;
};

/**
 * The rules of `settings`; throws an Error naming (never quoting) a proxy variable it cannot use. Unlike Go,
 * loopback hosts are proxied unless NO_PROXY names them (curl's and Python's rule, as KServe's initializer).
 */
export const proxyRules = (settings: ProxySettings): ProxyRules => {
  const http = proxyUrl(settings.httpProxy, 'HTTP_PROXY');
  const https = proxyUrl(settings.httpsProxy, 'HTTPS_PROXY');
  const noProxy = parseNoProxy(settings.noProxy);
  return {
    proxyFor: (url) => {
      const proxy = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
      return proxy === undefined || bypasses(noProxy, url) ? undefined : proxy;
    },
  };
};
