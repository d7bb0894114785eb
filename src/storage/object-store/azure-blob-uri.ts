/** Which https URLs are Azure Blob Storage, and the account, container, prefix and SAS such a URL names. */
import * as E from 'fp-ts/Either';
import { redactUri } from '../../core/storage-uri';
import { hasUserInfo } from '../../core/redact';

/** Host suffixes of Azure Blob Storage: the public cloud, Azure China, Azure US Government. */
export const azureBlobHostSuffixes: ReadonlyArray<string> = [
  '.blob.core.windows.net',
  '.blob.core.chinacloudapi.cn',
  '.blob.core.usgovcloudapi.net',
];

/**
 * Azure DNS zone endpoints (`<account>.z<NN>.blob.storage.azure.net`, one or two digits), which an account created
 * with `--dns-endpoint-type AzureDnsZone` has instead of `<account>.blob.core.windows.net`; KServe's initializer
 * takes them as Azure Blob too (`_AZURE_BLOB_RE`).
 */
const azureDnsZoneHost = /^[^.]+\.z\d{1,2}\.blob\.storage\.azure\.net$/;

/** What an Azure Blob URL names. */
export interface AzureBlobUri {
  /** The account's blob service: `https://acct.blob.core.windows.net`, or `<endpoint>/<account>` (path style). */
  readonly serviceUrl: string;
  readonly account: string;
  readonly container: string;
  /** The blob name prefix, URL-decoded (`m1/v 2` for `m1/v%202`). */
  readonly prefix: string;
  /** The SAS token of the URL's query (`sv=…&sig=…`), if it has one. */
  readonly sas?: string;
  /** The URL without its query: for messages. */
  readonly display: string;
}

// Container names: 3–63 of lower-case letters, digits and single hyphens; or the special $root and $web.
const containerPattern = /^(?:[a-z0-9](?:[a-z0-9]|-(?!-)){1,61}[a-z0-9]|\$root|\$web)$/;
const accountPattern = /^[a-z0-9]{3,24}$/;

/**
 * `endpoint` normalized as URLs are (`HTTP://Host:80` → `http://host`), ending with `/` so that `http://h/a` does not
 * claim `http://h/ab/…`; an endpoint that is no URL is left as it is (it will match nothing).
 */
const endpointBase = (endpoint: string): string => {
  const url = URL.parse(endpoint);
  const base = url === null ? endpoint : `${url.origin}${url.pathname}`;
  return base.endsWith('/') ? base : `${base}/`;
};

/** `url` under `endpoint` as `<account>.<endpoint host>` (same scheme and port, no path on the endpoint). */
const underHost = (url: URL, endpoint: string): boolean => {
  const base = URL.parse(endpoint);
  return (
    base !== null &&
    base.pathname.replace(/\/+$/, '') === '' &&
    base.protocol === url.protocol &&
    base.port === url.port &&
    url.hostname.endsWith(`.${base.hostname}`)
  );
};

const leadingScheme = /^([a-z][a-z0-9+.-]*):/i;

/** True when `uri` is surely no http(s) URL, told without parsing it: the router asks this of every URI. */
const surelyNotHttp = (uri: string): boolean => {
  if (uri.startsWith('/')) return true; // a path: no URL without a base
  const scheme = leadingScheme.exec(uri)?.[1]?.toLowerCase();
  return scheme !== undefined && scheme !== 'http' && scheme !== 'https';
};

/**
 * What an Azure Blob URL addresses: its account, in the host (`<account>.<host>`) or in the path
 * (`<endpoint>/<account>`); the account's blob service; and the path after the account's part.
 */
const addressingOf = (uri: string, endpoints: ReadonlyArray<string>) => {
  if (surelyNotHttp(uri)) return undefined;
  const url = URL.parse(uri);
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) return undefined;
  const plain = `${url.origin}${url.pathname}`;
  const base = endpoints.map(endpointBase).find((endpoint) => plain.startsWith(endpoint));
  if (base !== undefined) {
    const path = plain.slice(base.length);
    const account = path.split('/', 1)[0]!;
    return { url, account, serviceUrl: `${base}${account}`, rest: path.slice(account.length + 1) };
  }
  const azureHost =
    url.protocol === 'https:' &&
    (azureBlobHostSuffixes.some((suffix) => url.hostname.endsWith(suffix)) ||
      azureDnsZoneHost.test(url.hostname));
  if (!azureHost && !endpoints.some((endpoint) => underHost(url, endpoint))) return undefined;
  return {
    url,
    account: url.hostname.split('.', 1)[0]!,
    serviceUrl: url.origin,
    rest: url.pathname.slice(1),
  };
};

/**
 * True when the http(s) URL `uri` is Azure Blob, not a plain download: the rule of docs/storage.md, "Which https
 * URLs are Azure Blob".
 */
export const isAzureBlobUri = (uri: string, endpoints: ReadonlyArray<string>): boolean =>
  addressingOf(uri, endpoints) !== undefined;

/**
 * The account, container, prefix and SAS of an Azure Blob URL (see isAzureBlobUri); the Left says what is wrong,
 * showing the URL redacted.
 */
export const parseAzureBlobUri = (
  uri: string,
  endpoints: ReadonlyArray<string>,
): E.Either<string, AzureBlobUri> => {
  const display = redactUri(uri);
  const addressing = addressingOf(uri, endpoints);
  if (addressing === undefined) return E.left(`${display} is not an Azure Blob URL`);
  const { url, account, serviceUrl, rest } = addressing;
  if (hasUserInfo(url)) {
    return E.left(`${display}: user info is not how Azure Blob takes credentials (use a SAS or a key)`);
  }
  if (!accountPattern.test(account)) {
    return E.left(
      `${display}: the storage account is not an account name (3–24 lower-case letters and digits)`,
    );
  }
  const slash = rest.indexOf('/');
  const container = slash === -1 ? rest : rest.slice(0, slash);
  if (!containerPattern.test(container)) {
    return E.left(`${display}: no container named (expected …/<container>/<prefix>)`);
  }
  let prefix: string;
  try {
    prefix = decodeURIComponent(slash === -1 ? '' : rest.slice(slash + 1));
  } catch {
    return E.left(`${display}: the blob prefix is not valid percent-encoding`);
  }
  const sas = url.search.length > 1 ? url.search.slice(1) : undefined;
  return E.right({ serviceUrl, account, container, prefix, ...(sas !== undefined ? { sas } : {}), display });
};
