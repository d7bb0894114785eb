/** Which https URLs are Azure Blob Storage, and the account, container, prefix and SAS such a URL names. */
import * as E from 'fp-ts/Either';
import { redactUri } from '../../core/storage-uri';

/** Host suffixes of Azure Blob Storage: the public cloud, Azure China, Azure US Government. */
export const azureBlobHostSuffixes: ReadonlyArray<string> = [
  '.blob.core.windows.net',
  '.blob.core.chinacloudapi.cn',
  '.blob.core.usgovcloudapi.net',
];

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

const parseUrl = (uri: string): URL | undefined => {
  try {
    return new URL(uri);
  } catch {
    return undefined;
  }
};

/**
 * `endpoint` normalized as URLs are (`HTTP://Host:80` → `http://host`), ending with `/` so that `http://h/a` does not
 * claim `http://h/ab/…`; an endpoint that is no URL is left as it is (it will match nothing).
 */
const endpointBase = (endpoint: string): string => {
  const url = parseUrl(endpoint);
  const base = url === undefined ? endpoint : `${url.origin}${url.pathname}`;
  return base.endsWith('/') ? base : `${base}/`;
};

/**
 * The rule that makes an https URL Azure Blob instead of a plain download: its host ends with an Azure Blob
 * suffix (`<account>.blob.core.windows.net`, sovereign clouds too) and it is https, or it lies under one of the
 * configured `endpoints` (`--azure-blob-endpoints`: azurite, Azure Stack), path style `<endpoint>/<account>/…`.
 */
export const isAzureBlobUri = (uri: string, endpoints: ReadonlyArray<string>): boolean => {
  const url = parseUrl(uri);
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) return false;
  if (url.protocol === 'https:' && azureBlobHostSuffixes.some((suffix) => url.hostname.endsWith(suffix))) {
    return true;
  }
  const plain = `${url.origin}${url.pathname}`;
  return endpoints.some((endpoint) => plain.startsWith(endpointBase(endpoint)));
};

const decodeSegments = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
};

/**
 * The account, container, prefix and SAS of an Azure Blob URL (see isAzureBlobUri):
 * `https://<account>.blob.core.windows.net/<container>/<prefix>[?<sas>]`, or under a configured endpoint
 * `<endpoint>/<account>/<container>/<prefix>[?<sas>]`. The Left says what is wrong, showing the URL redacted.
 */
export const parseAzureBlobUri = (
  uri: string,
  endpoints: ReadonlyArray<string>,
): E.Either<string, AzureBlobUri> => {
  const display = redactUri(uri);
  const url = parseUrl(uri);
  if (url === undefined) return E.left(`${display} is not a valid URL`);
  if (url.username !== '' || url.password !== '') {
    return E.left(`${display}: user info is not how Azure Blob takes credentials (use a SAS or a key)`);
  }
  const plain = `${url.origin}${url.pathname}`;
  const endpoint = endpoints.find((candidate) => plain.startsWith(endpointBase(candidate)));
  let account: string;
  let serviceBase: string;
  let rest: string;
  if (endpoint !== undefined) {
    const path = plain.slice(endpointBase(endpoint).length);
    account = path.split('/', 1)[0]!;
    serviceBase = `${endpointBase(endpoint)}${account}`;
    rest = path.slice(account.length + 1);
  } else {
    account = url.hostname.split('.', 1)[0]!;
    serviceBase = url.origin;
    rest = url.pathname.slice(1);
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
  const prefix = decodeSegments(slash === -1 ? '' : rest.slice(slash + 1));
  if (prefix === undefined) return E.left(`${display}: the blob prefix is not valid percent-encoding`);
  const sas = url.search.length > 1 ? url.search.slice(1) : undefined;
  return E.right({
    serviceUrl: serviceBase,
    account,
    container,
    prefix,
    ...(sas !== undefined ? { sas } : {}),
    display,
  });
};
