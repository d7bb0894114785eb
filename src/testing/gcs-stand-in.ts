/** startGcsStandIn: a Google Cloud Storage JSON API stand-in (list, metadata, media download, STS token exchange). */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { crc32c, md5, parseRange, resource, type StoredObject } from './gcs-objects';
import { startHttpServer } from './http-server';

/** How to start the stand-in. */
export interface GcsStandInOptions {
  /** Most items one objects.list page holds, whatever `maxResults` asks (GCS: 1,000). */
  readonly maxPageSize?: number;
  /**
   * Storage requests need `Authorization: Bearer <token>` with a token the STS endpoint (`POST /v1/token`)
   * issued; without one they get GCS's 401. Default false: anyone may read (a public bucket).
   */
  readonly requireAuth?: boolean;
}

/** A request the stand-in received. */
export interface GcsRequest {
  readonly method: string;
  /** The decoded path: `/storage/v1/b/models/o/m1/a.bin`. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** The Range header, if any. */
  readonly range?: string;
  /** Whether it carried a token the stand-in issued (and has not revoked). */
  readonly authorized: boolean;
}

/**
 * What the stand-in does instead of serving a request: answer `status` (GCS's JSON error), send some bytes and
 * cut the connection, or send some bytes and then nothing, the connection left open (a stalled body).
 */
export type GcsFault =
  { readonly status: number } | { readonly cutAfterBytes: number } | { readonly stallAfterBytes: number };

/** Where a body stops, and whether its connection is cut there or left hanging. */
type BodyStop = { readonly afterBytes: number; readonly stall: boolean };
/** The stand-in's routes a fault can be injected on. */
export type GcsRoute = 'list' | 'metadata' | 'media';

/** A stored object's version, as the API reports it. */
export interface GcsObjectVersion {
  readonly generation: string;
  readonly size: number;
}

/** The running stand-in. */
export interface GcsStandIn {
  /** `http://127.0.0.1:<port>`: the SDK's `apiEndpoint`, also the STS `token_url` base (`<url>/v1/token`). */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: ReadonlyArray<GcsRequest>;
  /** Creates an empty bucket (nothing happens if it exists). */
  createBucket(bucket: string): void;
  /** Stores `data` as `name` in `bucket` (created if missing) under a new generation. */
  put(bucket: string, name: string, data: string | Uint8Array): GcsObjectVersion;
  /** Deletes an object. */
  remove(bucket: string, name: string): void;
  /** Refuses authorized callers access to `bucket` with GCS's 403 (a token without the permission). */
  forbid(bucket: string): void;
  /** Makes `subjectToken` exchangeable for access tokens at `POST /v1/token` (workload identity federation). */
  acceptSubjectToken(subjectToken: string): void;
  /** Stops accepting every subject token and invalidates every access token issued so far. */
  revokeTokens(): void;
  /** The next `times` requests on `route` (default 1; `Infinity` for all) meet `fault`; 0 clears it. */
  injectFault(route: GcsRoute, fault: GcsFault, times?: number): void;
  close(): Promise<void>;
}

const json = (response: ServerResponse, status: number, body: unknown): void => {
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
};

/** GCS's JSON API error body: `{ error: { code, message, errors: [{ message, domain, reason }] } }`. */
const apiError = (response: ServerResponse, code: number, reason: string, message: string): void =>
  json(response, code, { error: { code, message, errors: [{ message, domain: 'global', reason }] } });

const listRoute = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o$/;
const objectRoute = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/;

/**
 * Starts a stand-in for the GCS JSON API as `@google-cloud/storage` 7.x calls it: `GET /storage/v1/b/{b}/o`
 * (objects.list: `prefix`, `delimiter`, `maxResults`, `pageToken`), `GET /storage/v1/b/{b}/o/{name}` (metadata,
 * or the bytes with `alt=media`, honouring `generation`, `ifGenerationMatch` and `Range`), and the STS token
 * exchange of workload identity federation at `POST /v1/token`. Errors are the API's JSON error bodies.
 */
export const startGcsStandIn = async (options: GcsStandInOptions = {}): Promise<GcsStandIn> => {
  const maxPageSize = options.maxPageSize ?? 1000;
  const buckets = new Map<string, Map<string, StoredObject>>();
  const forbidden = new Set<string>();
  const subjectTokens = new Set<string>();
  const accessTokens = new Set<string>();
  const faults = new Map<GcsRoute, { fault: GcsFault; remaining: number }>();
  const requests: GcsRequest[] = [];
  let lastGeneration = Date.now() * 1000;

  const takeFault = (route: GcsRoute): GcsFault | undefined => {
    const entry = faults.get(route);
    if (entry === undefined || entry.remaining <= 0) return undefined;
    entry.remaining -= 1;
    return entry.fault;
  };

  const exchangeToken = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    let body = '';
    for await (const chunk of request) body += String(chunk);
    const form = new URLSearchParams(body);
    const subject = form.get('subject_token') ?? '';
    if (!subjectTokens.has(subject)) {
      json(response, 400, { error: 'invalid_grant', error_description: 'The subject token is invalid.' });
      return;
    }
    const token = `ya29.stand-in-${randomBytes(12).toString('hex')}`;
    accessTokens.add(token);
    json(response, 200, {
      access_token: token,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: 3600,
    });
  };

  const list = (response: ServerResponse, bucket: string, query: URLSearchParams): void => {
    const objects = buckets.get(bucket);
    if (objects === undefined) {
      apiError(response, 404, 'notFound', 'The specified bucket does not exist.');
      return;
    }
    const prefix = query.get('prefix') ?? '';
    const delimiter = query.get('delimiter') ?? '';
    const pageSize = Math.min(maxPageSize, Number(query.get('maxResults') ?? maxPageSize) || maxPageSize);
    const after = Buffer.from(query.get('pageToken') ?? '', 'base64url').toString();
    const names = [...objects.keys()].filter((name) => name.startsWith(prefix) && name > after).sort();
    const items: Array<Record<string, string>> = [];
    const prefixes = new Set<string>();
    let next = 0;
    for (; next < names.length && items.length + prefixes.size < pageSize; next++) {
      const name = names[next]!;
      const cut = delimiter === '' ? -1 : name.indexOf(delimiter, prefix.length);
      if (cut !== -1) prefixes.add(name.slice(0, cut + delimiter.length));
      else items.push(resource(bucket, name, objects.get(name)!));
    }
    const pageToken = next < names.length ? Buffer.from(names[next - 1]!).toString('base64url') : undefined;
    json(response, 200, {
      kind: 'storage#objects',
      ...(pageToken !== undefined ? { nextPageToken: pageToken } : {}),
      ...(prefixes.size > 0 ? { prefixes: [...prefixes] } : {}),
      ...(items.length > 0 ? { items } : {}),
    });
  };

  const media = (
    request: IncomingMessage,
    response: ServerResponse,
    object: StoredObject,
    stop: BodyStop | undefined,
  ): void => {
    const size = object.data.length;
    const header = request.headers.range;
    const span = header === undefined || size === 0 ? ([0, size - 1] as const) : parseRange(header, size);
    if (span === undefined) {
      apiError(response, 416, 'requestedRangeNotSatisfiable', 'The requested range cannot be satisfied.');
      return;
    }
    const [start, end] = span;
    const body = object.data.subarray(start, end + 1);
    response.writeHead(header === undefined || size === 0 ? 200 : 206, {
      'content-type': 'application/octet-stream',
      'content-length': body.length,
      ...(header !== undefined && size > 0 ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
      'x-goog-generation': object.generation,
      'x-goog-metageneration': '1',
      'x-goog-stored-content-length': size,
      'x-goog-stored-content-encoding': 'identity',
      'x-goog-hash': `crc32c=${crc32c(object.data)},md5=${md5(object.data)}`,
      etag: `C${object.generation}`,
    });
    if (stop !== undefined) {
      response.write(body.subarray(0, stop.afterBytes), () => (stop.stall ? undefined : response.destroy()));
      return;
    }
    response.end(body);
  };

  const object = (
    request: IncomingMessage,
    response: ServerResponse,
    bucket: string,
    name: string,
    query: URLSearchParams,
    stop: BodyStop | undefined,
  ): void => {
    const stored = buckets.get(bucket)?.get(name);
    const generation = query.get('generation');
    if (stored === undefined || (generation !== null && generation !== stored.generation)) {
      const which = generation === null ? '' : `#${generation}`;
      apiError(response, 404, 'notFound', `No such object: ${bucket}/${name}${which}`);
      return;
    }
    const match = query.get('ifGenerationMatch');
    if (match !== null && match !== stored.generation) {
      apiError(
        response,
        412,
        'conditionNotMet',
        'At least one of the pre-conditions you specified did not hold.',
      );
      return;
    }
    if (query.get('alt') === 'media') media(request, response, stored, stop);
    else json(response, 200, resource(bucket, name, stored));
  };

  const server = await startHttpServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://gcs');
    const path = decodeURIComponent(url.pathname);
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const authorized = token !== undefined && accessTokens.has(token);
    requests.push({
      method: request.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      ...(request.headers.range !== undefined ? { range: request.headers.range } : {}),
      authorized,
    });
    if (request.method === 'POST' && path === '/v1/token') return exchangeToken(request, response);
    const listed = listRoute.exec(url.pathname);
    const named = objectRoute.exec(url.pathname);
    const bucketPart = listed?.[1] ?? named?.[1];
    if (request.method !== 'GET' || bucketPart === undefined) {
      apiError(response, 404, 'notFound', 'Not Found');
      return;
    }
    const bucket = decodeURIComponent(bucketPart);
    if (options.requireAuth === true && !authorized) {
      const [code, reason, message] =
        token === undefined
          ? [
              401,
              'required',
              `Anonymous caller does not have storage.objects.get access to the bucket ${bucket}.`,
            ]
          : [401, 'authError', 'Invalid Credentials'];
      apiError(response, code, reason, message);
      return;
    }
    if (forbidden.has(bucket)) {
      apiError(
        response,
        403,
        'forbidden',
        `The caller does not have storage.objects.list access to ${bucket}.`,
      );
      return;
    }
    const route = listed !== null ? 'list' : url.searchParams.get('alt') === 'media' ? 'media' : 'metadata';
    const fault = takeFault(route);
    if (fault !== undefined && 'status' in fault) {
      apiError(response, fault.status, 'backendError', `Injected failure ${fault.status}.`);
      return;
    }
    const cut =
      fault === undefined || 'status' in fault
        ? undefined
        : 'cutAfterBytes' in fault
          ? { afterBytes: fault.cutAfterBytes, stall: false }
          : { afterBytes: fault.stallAfterBytes, stall: true };
    if (listed !== null) list(response, bucket, url.searchParams);
    else object(request, response, bucket, decodeURIComponent(named![2]!), url.searchParams, cut);
  });

  return {
    url: server.url,
    requests,
    createBucket: (bucket) => {
      if (!buckets.has(bucket)) buckets.set(bucket, new Map());
    },
    put: (bucket, name, data) => {
      if (!buckets.has(bucket)) buckets.set(bucket, new Map());
      lastGeneration = Math.max(lastGeneration + 1, Date.now() * 1000);
      const stored = {
        data: Buffer.from(data),
        generation: String(lastGeneration),
        updated: new Date().toISOString(),
      };
      buckets.get(bucket)!.set(name, stored);
      return { generation: stored.generation, size: stored.data.length };
    },
    remove: (bucket, name) => void buckets.get(bucket)?.delete(name),
    forbid: (bucket) => void forbidden.add(bucket),
    acceptSubjectToken: (subjectToken) => void subjectTokens.add(subjectToken),
    revokeTokens: () => {
      subjectTokens.clear();
      accessTokens.clear();
    },
    injectFault: (route, fault, times = 1) => void faults.set(route, { fault, remaining: times }),
    close: () => server.close(),
  };
};
