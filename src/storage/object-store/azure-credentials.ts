/** Azure Blob credentials: read from the environment, and each bound to the account (and endpoint) it is for. */
import type { Env } from '../../core/env';
import type { AnonymousCredential, newPipeline, StorageSharedKeyCredential } from '@azure/storage-blob';
import { sameEndpoint } from '../../core/endpoint';
import { lazyModule } from '../../core/lazy-module';
import { registerSecret } from '../../core/redact';
import type { AzureBlobUri } from './azure-blob-uri';
import { credentialsFileVersion } from './credentials-file';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first Azure Blob model (lazy-module.ts) */
const blobSdk = lazyModule(() => require('@azure/storage-blob') as typeof import('@azure/storage-blob'));

/** An Azure AD credential (`DefaultAzureCredential`: workload identity, a service principal, managed identity). */
export type AzureTokenCredential = Exclude<
  Parameters<typeof newPipeline>[0],
  StorageSharedKeyCredential | AnonymousCredential | undefined
>;

/** The credentials Azure Blob URLs are read with; see `azureCredentialFor` for which one a URL gets. */
export interface AzureCredentials {
  /**
   * `AZURE_STORAGE_ACCOUNT` (the az CLI's name): the one account the key, the SAS token and Azure AD are for; a URL
   * naming another account gets none of them. Unset: the SAS token is for no URL (it names no account itself).
   */
  readonly account?: string;
  /**
   * `AZURE_STORAGE_CONNECTION_STRING`: its `AccountKey` or `SharedAccessSignature`, only for its `AccountName` at
   * its blob endpoint (`BlobEndpoint`, else `<DefaultEndpointsProtocol>://<account>.blob.<EndpointSuffix>`).
   */
  readonly connectionString?: string;
  /** `AZURE_STORAGE_ACCESS_KEY` (KServe) or `AZURE_STORAGE_KEY` (az CLI): the account's key (Shared Key). */
  readonly accountKey?: string;
  /** `AZURE_STORAGE_SAS_TOKEN`: a SAS for URLs of `account` that carry none. */
  readonly sasToken?: string;
  /** Azure AD (https only). */
  readonly tokenCredential?: AzureTokenCredential;
  /**
   * `AZURE_ACCESS_TOKEN` (KServe 0.19's agent): a bearer token, for the one blob service `AZURE_SERVICE_URL` names,
   * else `https://<AZURE_ACCOUNT_NAME>.blob.core.windows.net`; without either it is for none (https only).
   */
  readonly accessToken?: { readonly token: string; readonly serviceUrl?: string };
}

/** The bearer token of `AZURE_ACCESS_TOKEN` as a credential: the store, not a clock here, says when it expired. */
const staticToken = (token: string): AzureTokenCredential => ({
  getToken: () => Promise.resolve({ token, expiresOnTimestamp: Date.now() + 5 * 60_000 }),
});

/** A blob service URL as services are compared: normalized as URLs are, no trailing `/`, no query. */
const serviceOf = (url: string): string => {
  const parsed = URL.parse(url);
  return (parsed === null ? url : `${parsed.origin}${parsed.pathname}`).replace(/\/+$/, '');
};

/** The `Key=Value;…` pairs of a connection string; values may hold `=` (base64). */
const connectionStringFields = (text: string): ReadonlyMap<string, string> =>
  new Map(
    text
      .split(';')
      .map((pair) => pair.trim())
      .filter((pair) => pair.includes('='))
      .map((pair) => [pair.slice(0, pair.indexOf('=')).toLowerCase(), pair.slice(pair.indexOf('=') + 1)]),
  );

/**
 * `credential` with the files DefaultAzureCredential reads whole at each token (`AZURE_FEDERATED_TOKEN_FILE`,
 * `AZURE_CLIENT_CERTIFICATE_PATH`) checked first (credentialsFileVersion); a missing one is the SDK's to report.
 */
export const withCheckedFiles = (env: Env, credential: AzureTokenCredential): AzureTokenCredential => {
  const files = [env.AZURE_FEDERATED_TOKEN_FILE, env.AZURE_CLIENT_CERTIFICATE_PATH]
    .map((file) => file?.trim())
    .filter((file): file is string => file !== undefined && file !== '');
  return {
    getToken: async (scopes, options) => {
      for (const file of files) await credentialsFileVersion(file, 'Azure');
      return credential.getToken(scopes, options);
    },
  };
};

/**
 * The credentials in `env`, every secret in them registered (hidden in every line from now on). Azure AD
 * (`makeTokenCredential`, i.e. DefaultAzureCredential) is used when `AZURE_CLIENT_ID` or
 * `AZURE_FEDERATED_TOKEN_FILE` is set (a service principal, workload identity) or `AZURE_STORAGE_AUTH_MODE=login`
 * (managed identity).
 */
export const azureCredentialsFromEnv = (
  env: Env,
  makeTokenCredential: () => AzureTokenCredential,
): AzureCredentials => {
  const value = (name: string): string | undefined => {
    const text = env[name]?.trim() || undefined;
    if (text !== undefined) registerSecret(text);
    return text;
  };
  const account = env['AZURE_STORAGE_ACCOUNT']?.trim().toLowerCase();
  const connectionString = value('AZURE_STORAGE_CONNECTION_STRING');
  connectionStringFields(connectionString ?? '').forEach((field) => registerSecret(field));
  const accountKey = value('AZURE_STORAGE_ACCESS_KEY') ?? value('AZURE_STORAGE_KEY');
  const sasToken = value('AZURE_STORAGE_SAS_TOKEN')?.replace(/^\?/, '');
  value('AZURE_CLIENT_SECRET');
  const accessToken = value('AZURE_ACCESS_TOKEN');
  const serviceUrl = env['AZURE_SERVICE_URL']?.trim();
  const accountName = env['AZURE_ACCOUNT_NAME']?.trim().toLowerCase();
  const tokenService = serviceUrl
    ? serviceOf(serviceUrl)
    : accountName
      ? `https://${accountName}.blob.core.windows.net`
      : undefined;
  // A blank variable is none, as KServe's initializer reads AZURE_CLIENT_ID (a Secret's key left empty).
  const useAzureAd =
    Boolean(env.AZURE_CLIENT_ID?.trim()) ||
    Boolean(env.AZURE_FEDERATED_TOKEN_FILE?.trim()) ||
    env.AZURE_STORAGE_AUTH_MODE?.toLowerCase() === 'login';
  return {
    account: account || undefined,
    connectionString,
    accountKey,
    sasToken,
    tokenCredential: useAzureAd ? makeTokenCredential() : undefined,
    accessToken: accessToken === undefined ? undefined : { token: accessToken, serviceUrl: tokenService },
  };
};

/** What a URL is read with: a credential for the pipeline, a SAS for the URL, and its name for messages. */
export interface ChosenCredential {
  readonly credential: StorageSharedKeyCredential | AnonymousCredential | AzureTokenCredential;
  readonly sas?: string;
  readonly source: string;
}

/** The blob service a connection string's credential is for: its `BlobEndpoint`, else the one its fields name. */
const connectionStringService = (fields: ReadonlyMap<string, string>): string => {
  const protocol = fields.get('defaultendpointsprotocol') ?? 'https';
  const suffix = fields.get('endpointsuffix') ?? 'core.windows.net';
  return fields.get('blobendpoint') ?? `${protocol}://${fields.get('accountname') ?? ''}.blob.${suffix}`;
};

/**
 * The credential of `target`, the first that applies (the order: docs/storage.md, Azure Blob "Credentials"). A
 * credential is never sent to another account: a bearer SAS would be spent there, and what another account's owner
 * sees of a request is theirs.
 */
export const azureCredentialFor = (target: AzureBlobUri, credentials: AzureCredentials): ChosenCredential => {
  const sdk = blobSdk();
  const anonymous = new sdk.AnonymousCredential();
  if (target.sas !== undefined)
    return { credential: anonymous, sas: target.sas, source: 'the SAS in the URL' };
  const fields = connectionStringFields(credentials.connectionString ?? '');
  if (
    fields.get('accountname') === target.account &&
    sameEndpoint(connectionStringService(fields), target.serviceUrl)
  ) {
    const key = fields.get('accountkey');
    if (key !== undefined) {
      const credential = new sdk.StorageSharedKeyCredential(target.account, key);
      return { credential, source: 'the connection string' };
    }
    const sas = fields.get('sharedaccesssignature');
    if (sas !== undefined) return { credential: anonymous, sas, source: 'the connection string' };
  }
  const { account } = credentials;
  if (account === undefined || account === target.account) {
    if (credentials.accountKey !== undefined) {
      const credential = new sdk.StorageSharedKeyCredential(target.account, credentials.accountKey);
      return { credential, source: 'the account key' };
    }
    if (credentials.sasToken !== undefined && account !== undefined) {
      return { credential: anonymous, sas: credentials.sasToken, source: 'AZURE_STORAGE_SAS_TOKEN' };
    }
    if (credentials.tokenCredential !== undefined) {
      return { credential: credentials.tokenCredential, source: 'Azure AD' };
    }
  }
  const { accessToken } = credentials;
  if (accessToken?.serviceUrl !== undefined && serviceOf(target.serviceUrl) === accessToken.serviceUrl) {
    return { credential: staticToken(accessToken.token), source: accessTokenSource };
  }
  return { credential: anonymous, source: withheldReason(credentials) };
};

/** The source of `AZURE_ACCESS_TOKEN`'s credential: a bearer token, sent over https only (as Azure AD's). */
export const accessTokenSource = 'AZURE_ACCESS_TOKEN';

/** Why a URL goes anonymous although credentials are configured (for its messages), or just that there are none. */
const withheldReason = ({
  account,
  accountKey,
  sasToken,
  tokenCredential,
  accessToken,
}: AzureCredentials): string => {
  if (account !== undefined && (accountKey ?? sasToken ?? tokenCredential) !== undefined) {
    return `no credentials: those configured are for the account ${account}`;
  }
  if (sasToken !== undefined)
    return 'no credentials: AZURE_STORAGE_SAS_TOKEN is sent only with AZURE_STORAGE_ACCOUNT';
  if (accessToken !== undefined)
    return accessToken.serviceUrl === undefined
      ? 'no credentials: AZURE_ACCESS_TOKEN is sent only with AZURE_ACCOUNT_NAME or AZURE_SERVICE_URL'
      : `no credentials: AZURE_ACCESS_TOKEN is for ${accessToken.serviceUrl}`;
  return 'no credentials';
};
