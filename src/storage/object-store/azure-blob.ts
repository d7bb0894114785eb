/** azureBlobStorage: Azure Blob Storage URLs as a storage provider (through the generic object downloader), over @azure/storage-blob. */
import type { Agent } from 'node:http';
import type { ContainerListBlobFlatSegmentResponse, StoragePipelineOptions } from '@azure/storage-blob';
import * as E from 'fp-ts/Either';
import { EffectError, permanentError, retryableError, retryAfterOf } from '../../core/errors';
import { storageRequestTries } from '../../core/retry-policy';
import { registerSecret } from '../../core/redact';
import type { StorageProvider } from '../../ports';
import type { ClaimingProvider } from '../router';
import { transportError } from '../../net';
import { isAzureBlobUri, parseAzureBlobUri, type AzureBlobUri } from './azure-blob-uri';
import {
  accessTokenSource,
  azureCredentialFor,
  type AzureCredentials,
  type ChosenCredential,
} from './azure-credentials';
import {
  noBytes,
  type ObjectLocation,
  type ObjectStoreClient,
  type StoredObject,
  type ListingBounds,
} from './client';
import { pageObjects } from './listing-bounds';
import { jsonObject } from '../../core/json/json-object';
import { objectStoreStorage, type ObjectDownloadOptions, type ResolvedLocation } from './download-objects';
import { idleChunks } from './idle-watch';
import { lazyModule } from '../../core/lazy-module';
import { storeStatusError } from './store-error';
import { boundAzureAnswers } from './sdk-answers';
import { defaultDownloadLimits } from '../download-limits';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first Azure Blob model (lazy-module.ts) */
const blobSdk = lazyModule(() => require('@azure/storage-blob') as typeof import('@azure/storage-blob'));

/** How Azure Blob is reached, and the downloader's settings. */
export interface AzureBlobStorageOptions extends ObjectDownloadOptions {
  /** Endpoints whose URLs are Azure Blob, path style `<endpoint>/<account>/<container>/<prefix>` (azurite). */
  readonly endpoints?: ReadonlyArray<string>;
  readonly credentials?: AzureCredentials;
  /** The agent for a service URL (proxy, CA bundle); default the SDK's own (which reads `HTTPS_PROXY`). */
  readonly agentFor?: (url: URL) => Agent | undefined;
  /** Longest wait for an answer, and for the next bytes of a body, in ms (default 60 s). */
  readonly timeoutMs?: number;
  /** Retries of a failed request the SDK makes itself before it fails the attempt (default `storageRequestTries` - 1). */
  readonly sdkRetries?: number;
  /** Blobs asked for per list page (Azure answers at most 5,000). */
  readonly pageSize?: number;
}

const firstLine = (text: unknown): string => (typeof text === 'string' ? text.split('\n', 1)[0]!.trim() : '');

/** Any failure of the SDK as an EffectError: a service answer by its status, an abort, a credential, else transport. */
const azureError = (
  cause: unknown,
  what: string,
  phase: 'list' | 'read',
  signal: AbortSignal,
): EffectError => {
  // Only our signal makes an abort ours: the SDK reports a body whose connection dropped as an AbortError too.
  if (signal.aborted) return transportError(signal.reason, { what, aborted: true });
  const failure = (typeof cause === 'object' && cause !== null ? cause : {}) as Record<string, unknown>;
  const { statusCode, code, name, message } = failure;
  if (typeof statusCode === 'number' && statusCode >= 400) {
    const detail = [code, firstLine(message)]
      .filter((part) => typeof part === 'string' && part !== '')
      .join(': ');
    // RestError keeps the answer: its Retry-After is the store's pause (core-rest-pipeline's HttpHeaders).
    const headers = (failure['response'] as { headers?: { get?: (name: string) => unknown } } | undefined)
      ?.headers;
    const retryAfter = headers?.get?.('retry-after');
    const retryAfterMs = retryAfterOf(typeof retryAfter === 'string' ? retryAfter : undefined);
    return storeStatusError({ what, status: statusCode, phase, detail, retryAfterMs });
  }
  if (name === 'CredentialUnavailableError' || name === 'AggregateAuthenticationError') {
    return permanentError('refused', `${what}: no Azure AD credential: ${firstLine(message)}`, cause);
  }
  return transportError(cause, { what, aborted: false, connectionLost: phase === 'read' });
};

/**
 * True for a SAS signed for one blob (`sr=b`: what the portal's "Generate SAS" on a blob and `az storage blob
 * generate-sas` give): it reads that blob and lists nothing, so the URL names the one blob to fetch.
 */
const signedForOneBlob = (sas: string | undefined): boolean =>
  sas !== undefined && new URLSearchParams(sas).get('sr') === 'b';

/** A listing's refusal that a blob readable by anyone may lie behind: 401 or 403, or 404 (Azure's for a private container). */
const refusedToAnyone = (error: EffectError): boolean =>
  error.kind === 'not-found' || error.status === 401 || error.status === 403;

/** The client of one container, read with the credential chosen for its URL. */
const containerStore = (
  target: AzureBlobUri,
  chosen: ChosenCredential,
  options: AzureBlobStorageOptions,
): ObjectStoreClient => {
  const { timeoutMs = 60_000, sdkRetries = storageRequestTries - 1, pageSize = 5000 } = options;
  const agent = options.agentFor?.(new URL(target.serviceUrl));
  // `agent` is a pipeline option the SDK passes on (core-rest-pipeline's agentPolicy), not in its type.
  const pipelineOptions: StoragePipelineOptions & { agent?: Agent } = {
    retryOptions: { maxTries: sdkRetries + 1, tryTimeoutInMs: timeoutMs, retryDelayInMs: 500 },
    ...(agent !== undefined ? { agent } : {}),
  };
  const query = chosen.sas === undefined ? '' : `?${chosen.sas}`;
  // No credential and no SAS: a listing refused is refused to anyone, which a readable blob may still be.
  const anonymous = chosen.sas === undefined && chosen.credential instanceof blobSdk().AnonymousCredential;
  const mayNameOneBlob = anonymous && target.prefix !== '' && !target.prefix.endsWith('/');
  const pipeline = blobSdk().newPipeline(chosen.credential, pipelineOptions);
  const container = new (blobSdk().ContainerClient)(
    `${target.serviceUrl}/${target.container}${query}`,
    pipeline,
  );
  boundAzureAnswers(pipeline, (options.limits ?? defaultDownloadLimits).minRate, timeoutMs);
  const blobUrl = (key: string): string => `${target.serviceUrl}/${target.container}/${key}`;

  async function* list(
    location: ObjectLocation,
    signal: AbortSignal,
    bounds: ListingBounds,
  ): AsyncGenerator<StoredObject> {
    const what = `listing ${location.display} (${chosen.source})`;
    // The blob the URL names, read by its properties in place of a listing (as KServe's agent GETs it).
    const oneBlob = async (): Promise<StoredObject> => {
      const reading = `reading ${location.display} (${chosen.source})`;
      const properties = await bounds.ask(() =>
        container
          .getBlobClient(location.prefix)
          .getProperties({ abortSignal: signal })
          .catch((cause: unknown) => Promise.reject(azureError(cause, reading, 'list', signal))),
      );
      const object = bounds.object(reading, {
        key: location.prefix,
        size: properties.contentLength,
        version: properties.etag,
      });
      bounds.page(undefined);
      return object;
    };
    if (signedForOneBlob(chosen.sas)) {
      // The listing would be refused (403): the blob the URL names stands for it; under any other prefix (the
      // URL's as a folder, `<blob>/`) there is nothing the SAS may read.
      if (location.prefix === target.prefix) yield await oneBlob();
      return;
    }
    // A page of its own for each token, so a page the store pushed back on can be asked again (ListingBounds.ask):
    // the SDK's own pager ends at its first failure.
    const pageAt = async (
      continuationToken: string | undefined,
    ): Promise<ContainerListBlobFlatSegmentResponse | undefined> => {
      const pages = container
        .listBlobsFlat({ prefix: location.prefix, abortSignal: signal })
        .byPage({ maxPageSize: pageSize, ...(continuationToken === undefined ? {} : { continuationToken }) });
      try {
        const next: IteratorResult<ContainerListBlobFlatSegmentResponse> = await pages.next();
        return next.done === true ? undefined : next.value;
      } catch (cause) {
        throw cause instanceof EffectError || cause instanceof TypeError
          ? cause
          : azureError(cause, what, 'list', signal);
      }
    };
    let listed = false;
    try {
      let token: string | undefined;
      do {
        const page = await bounds.ask(() => pageAt(token));
        listed = true;
        if (page === undefined) return;
        // `bounds` sees each continuation token and stops a circle.
        const items = jsonObject(jsonObject(page)?.['segment'])?.['blobItems'] ?? [];
        yield* pageObjects(what, 'blob items', items, bounds, (fields) => {
          const properties = jsonObject(fields?.['properties']);
          return {
            key: fields?.['name'],
            size: properties?.['contentLength'],
            version: properties?.['etag'],
          };
        });
        const next: unknown = page.continuationToken;
        token = typeof next === 'string' && next !== '' ? next : undefined;
        bounds.page(token);
      } while (token !== undefined);
    } catch (cause) {
      // A container whose public access is "blob" lets anyone read its blobs but no one list them (403, or
      // 404 from Azure): with no credential, a URL that may name one blob (no trailing "/") is read as that blob,
      // as KServe's agent GETs it; its `<blob>/` listing has nothing. Not there either: the listing's refusal.
      if (cause instanceof EffectError && !listed && refusedToAnyone(cause) && mayNameOneBlob) {
        if (location.prefix !== target.prefix) return;
        let blob: StoredObject;
        try {
          blob = await oneBlob();
        } catch (error) {
          // Its own failure when it is no refusal (an abort, a 503): only "not there either" is the listing's.
          if (error instanceof EffectError && refusedToAnyone(error)) throw cause;
          throw error;
        }
        yield blob;
        return;
      }
      if (cause instanceof EffectError) throw cause;
      // The SDK reading an answer no listing gives (an item without a name) fails with a TypeError of its own.
      if (cause instanceof TypeError && !signal.aborted)
        throw retryableError(
          'invalid-response',
          `${what}: the store's answer is not a listing: ${cause.message}`,
        );
      throw azureError(cause, what, 'list', signal);
    }
  }

  const read: ObjectStoreClient['read'] = async (_location, object, offset, signal, end = object.size) => {
    if (offset >= end) return noBytes();
    const what = `reading ${blobUrl(object.key)} (${chosen.source})`;
    const failure = (cause: unknown): EffectError =>
      // The SDK refuses an answer without a Content-Length before reading it: the store's answer, not the connection.
      cause instanceof RangeError && !signal.aborted
        ? retryableError('invalid-response', `${what}: the store's answer is no download: ${cause.message}`)
        : azureError(cause, what, 'read', signal);
    const count = end < object.size ? end - offset : undefined;
    const response = await container
      .getBlobClient(object.key)
      .download(offset, count, {
        abortSignal: signal,
        conditions: { ifMatch: object.version },
        // Resuming is the downloader's (one mechanism, logged and capped); the SDK's own would hide cuts.
        maxRetryRequests: 0,
      })
      .catch((cause: unknown) => Promise.reject(failure(cause)));
    // The SDK ends a body's request timeout at the headers: a body that stops sending is failed here.
    const body = response.readableStreamBody;
    return body === undefined ? noBytes() : idleChunks(body, timeoutMs, what, signal, failure);
  };

  return { list, read };
};

/**
 * Azure Blob Storage through `@azure/storage-blob`, for the URLs `claims` (see isAzureBlobUri; docs/storage.md,
 * "Azure Blob"). A SAS in the URL or the environment is registered as a secret before any request.
 */
export const azureBlobStorage = (
  options: AzureBlobStorageOptions = {},
): StorageProvider & ClaimingProvider => {
  const endpoints = options.endpoints ?? [];
  const credentials = options.credentials ?? {};
  const resolve = (uri: string): E.Either<string, ResolvedLocation> => {
    const parsed = parseAzureBlobUri(uri, endpoints);
    if (E.isLeft(parsed)) return parsed;
    const target = parsed.right;
    const chosen = azureCredentialFor(target, credentials);
    if (chosen.sas !== undefined) {
      registerSecret(chosen.sas);
      for (const signature of new URLSearchParams(chosen.sas).getAll('sig')) registerSecret(signature);
    }
    if (chosen.source === 'Azure AD' && !target.serviceUrl.startsWith('https:')) {
      return E.left(`${target.display}: Azure AD credentials are only sent over https`);
    }
    if (chosen.source === accessTokenSource && !target.serviceUrl.startsWith('https:')) {
      return E.left(`${target.display}: AZURE_ACCESS_TOKEN is only sent over https`);
    }
    const location = { bucket: target.container, prefix: target.prefix, display: target.display };
    // Two accounts may each have a container of that name: a push-back of one pauses only its own.
    const store = `${target.serviceUrl}/${target.container}`;
    return E.right({ client: containerStore(target, chosen, options), location, store });
  };
  const provider = objectStoreStorage({ ...options, schemes: [], resolve });
  return { ...provider, name: 'azure', claims: (uri) => isAzureBlobUri(uri, endpoints) };
};
