/**
 * httpStorage: the StorageProvider for http:// and https:// URLs: one file saved (in ranged parts over several
 * connections when the server serves ranges of a big file, else as one resumable stream), or an archive extracted.
 */
import path from 'node:path';
import { hostKey } from '../../core/endpoint';
import { permanentError } from '../../core/errors';
import { fileFilter, selectedNone, selectionKey, selectsAll } from '../../core/file-selection';
import { inSlot } from '../../core/slots';
import { redactUri } from '../../core/storage-uri';
import { withoutValuesOf } from '../../core/request-values';
import { discardBody, dropBody, headerOf, httpUrl, isOk } from '../../net';
import { answerStatusError } from '../store-answer';
import { isPushback, storePressures, type StorePressure } from '../store-pressure';
import type { RetryPolicy } from '../../core/retry-policy';
import type { DownloadFunction, DownloadRequest, StorageProvider, WrittenFiles } from '../../ports';
import { archiveFormatOf, extractStream, type ArchiveFormat } from '../archive/extract';
import { defaultDownloadLimits, type DownloadLimits } from '../download-limits';
import { modelGuard } from '../transfer-guard';
import { trackProgress } from '../transfer-progress';
import { Attempt, httpGet, type GetSettings } from './http-get';
import { saveBody, wholeBody, type SaveJob, type SaveSettings } from './save-body';
import { basicFromUserInfo, withAuthorization } from './user-info';
import { changedFile, contentLengthOf, validatorOf, type BodyResponse } from './resumable-body';

/**
 * Every field has a default (the flags'), so a test or an integrator sets only what it is about: the GET's timeouts
 * 30 s to the headers and 60 s between bytes, undici's global pool, the flags' limits, 5 resumes, 8 streams, no pool.
 */
export interface HttpStorageOptions extends Partial<GetSettings>, Partial<SaveSettings> {
  /** Extra request headers by lower-case host name (see parseHostHeaders). */
  readonly headersByHost?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** The model cap, the archive caps and the minimum rate. */
  readonly limits?: DownloadLimits;
  /** The waits and tries after a store's push-back (the flags' retry policy; default `defaultPushbackPolicy`). */
  readonly retry?: RetryPolicy;
}

/** How a response body is stored: saved as one file, or extracted as a tar (maybe gzipped) or zip archive. */
export type BodyKind = 'file' | ArchiveFormat;

const zipTypes = new Set(['application/zip', 'application/x-zip-compressed']);
const tarTypes = new Set([
  'application/x-tar',
  'application/x-gtar',
  'application/gzip',
  'application/x-gzip',
]);

/**
 * Decides how to store a body. An archive Content-Type wins (KServe dispatched on it alone); `text/*` means
 * a file whatever the URL says (KServe's W13 serves `test.zip` as text); any other type, generic ones like
 * application/octet-stream included, lets the URL path's extension decide.
 */
export const bodyKind = (contentType: string | null, urlPath: string): BodyKind => {
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (zipTypes.has(media)) return 'zip';
  if (tarTypes.has(media)) return 'tar';
  if (media.startsWith('text/')) return 'file';
  return archiveFormatOf(urlPath) ?? 'file';
};

type Settings = HttpStorageOptions &
  GetSettings &
  SaveSettings & {
    readonly limits: DownloadLimits;
    /** Each origin's push-back state, shared by this provider's downloads. */
    readonly pressures: (origin: string) => StorePressure;
  };

/**
 * The name a body is saved under: the URL path's last segment, decoded. A path ending in `/` names no file (its
 * body is most often an index page): refused, as KServe's initializer refuses it ("No filename contained in URI").
 */
const fileNameOf = (url: URL, what: string): string => {
  const segment = url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    name = segment;
  }
  if (name === '') {
    const message = `${what}: the URL names no file (its path ends in "/"); name the file, or serve an archive`;
    throw permanentError('invalid-uri', message);
  }
  if (name === '.' || name === '..' || /[/\\\0]/.test(name)) {
    throw permanentError('refused', `${what}: cannot save a file named ${JSON.stringify(name)}`);
  }
  return name;
};

/** Whether two answers of one URL are of one version: the same validator, and the same size where both say it. */
const sameVersion = (a: BodyResponse, b: BodyResponse): boolean => {
  const [sizeA, sizeB] = [contentLengthOf(a.headers), contentLengthOf(b.headers)];
  return (
    validatorOf(a.headers) === validatorOf(b.headers) &&
    (sizeA === undefined || sizeB === undefined || sizeA === sizeB)
  );
};

/** The identity of a body for `request.reuse`: the URL with the validator the server gave, its size and the selection. */
const identityOf = (
  url: URL,
  response: BodyResponse,
  select: DownloadRequest['select'],
): string | undefined => {
  const validator = validatorOf(response.headers);
  if (validator === undefined) return undefined;
  const size = contentLengthOf(response.headers) ?? '?';
  return `http ${url.href} ${validator} ${size} ${selectionKey(select)}`;
};

const download = async (
  settings: Settings,
  ...[uri, targetDir, signal, progress, request]: Parameters<DownloadFunction>
): Promise<WrittenFiles | undefined> => {
  const what = `GET ${redactUri(uri)}`;
  const { uri: withoutUserInfo, authorization } = basicFromUserInfo(uri);
  const url = httpUrl(withoutUserInfo, what);
  const { limits } = settings;
  const attempt = new Attempt(what, signal, settings);
  const guard = modelGuard(what, targetDir, limits, (error) => attempt.stop(error));
  // KServe's <host>-headers and the URI's own user:password (as Basic, in place of theirs), for its endpoint alone.
  const credentials = withAuthorization(
    settings.headersByHost?.get(hostKey(url.hostname)) ?? {},
    authorization,
  );
  const get: SaveJob['reopen'] = (extra, on) => httpGet(url, settings, what, on, credentials, extra);
  const pressure = settings.pressures(url.origin);
  // One file's URL: the patterns decide before the GET (an archive's entries are the extractor's to select).
  if (
    !selectsAll(request?.select) &&
    archiveFormatOf(url.pathname) === undefined &&
    !url.pathname.endsWith('/')
  ) {
    const name = fileNameOf(url, what);
    if (!fileFilter(request?.select)(name))
      throw permanentError('not-found', `${what}: ${selectedNone(request?.select, 1, 'file')} (${name})`);
  }
  let tracker: { readonly stop: () => void } | undefined;
  // A push-back of the first request fails this attempt, nothing fetched yet (the loader's backoff retries it, at
  // least as long as Retry-After said, and shows it Retrying), and pauses every request to the origin meanwhile.
  const open = (): Promise<BodyResponse> =>
    pressure.ask(attempt.signal, async () => {
      const response = await get({}, attempt.signal);
      // The whole file comes with a 200 alone: a 204 has none of it, a 206 to a GET without Range a part.
      if (response.status !== 200)
        throw await answerStatusError(what, response, limits.minRate, withoutValuesOf([url, response.url]));
      return response;
    });
  /**
   * The identity from a HEAD, and whether the offer filled the dir from it, for an offer likely to (a node cache):
   * a hit then moves no byte of the body, where a GET's in-flight bytes would, and the HEAD, sent with this pod's
   * own credentials, shows that it may read the object. Undefined when the server answers no HEAD (a presigned
   * GET URL, say) or names no validator: the GET then tells.
   */
  const identifyByHead = async (
    reuse: NonNullable<DownloadRequest['reuse']>,
  ): Promise<{ readonly head: BodyResponse; readonly filled: boolean } | undefined> => {
    await pressure.admit(attempt.signal);
    const head = await httpGet(url, settings, what, attempt.signal, credentials, {}, 'HEAD');
    // A push-back pauses the origin: the GET below waits it out.
    const refused = isOk(head)
      ? undefined
      : await answerStatusError(what, head, limits.minRate, withoutValuesOf([url, head.url]));
    if (isPushback(refused)) pressure.pushedBack(refused);
    await discardBody(head);
    const identity = isOk(head) ? identityOf(url, head, request?.select) : undefined;
    return identity === undefined ? undefined : { head, filled: await reuse(identity) };
  };
  // The one file saved, told to the commit (WrittenFiles); nothing when filled from another model or extracted.
  const fetch = async (): Promise<WrittenFiles | undefined> => {
    const reuse = request?.reuse;
    const probed =
      reuse !== undefined && request?.identifyFirst === true ? await identifyByHead(reuse) : undefined;
    if (probed?.filled === true) return undefined;
    let response = await open();
    // The URL as written names the model; a redirect target is often an opaque blob or presigned URL.
    const kind = bodyKind(headerOf(response.headers, 'content-type') ?? null, url.pathname);
    // A URL naming no file fails below: its body is let go first (bounded), not left on the socket.
    if (kind === 'file' && url.pathname.endsWith('/')) await discardBody(response);
    const name = kind === 'file' ? fileNameOf(url, what) : undefined;
    const to = name === undefined ? undefined : path.join(targetDir, name);
    // The bytes are published under the HEAD's identity (a node cache): they must be the bytes it named.
    if (probed !== undefined && !sameVersion(probed.head, response)) {
      throw await changedFile(response, `${what}: answered another version than its HEAD`);
    }
    const identity =
      reuse === undefined || probed !== undefined ? undefined : identityOf(url, response, request?.select);
    if (identity !== undefined) {
      const offer = reuse!(identity);
      // An offer still open after this turn waits for another model's download of the same bytes: the body is
      // dropped meanwhile, not held (its socket would fill with bytes nobody reads, and the server may time it out),
      // and fetched again only if that download fails.
      const waiting = Symbol('waiting');
      const early = await Promise.race([
        offer,
        new Promise<symbol>((resolve) => setImmediate(resolve, waiting)),
      ]);
      if (early !== false) {
        dropBody(response);
        if (early === true || (await offer)) return undefined;
        response = await open();
      }
    }
    const announced = contentLengthOf(response.headers);
    if (announced !== undefined)
      await guard.admit(announced).catch(async (error: unknown) => {
        await discardBody(response);
        throw error;
      });
    tracker = trackProgress({
      bytes: () => guard.total,
      totalBytes: () => announced,
      everyMs: limits.progressIntervalMs,
      report: progress,
    });
    if (name !== undefined && to !== undefined) {
      const bytes = await saveBody(
        response,
        { what, to, attempt, guard, reopen: get, pressure, minRate: limits.minRate },
        settings,
      );
      return new Map([[name, bytes]]);
    }
    const body = wholeBody(
      response,
      { what, attempt, guard, reopen: get, pressure, minRate: limits.minRate },
      settings.maxResumes,
    );
    await extractStream(body, kind as ArchiveFormat, targetDir, {
      what,
      signal: attempt.signal,
      limits,
      select: request?.select,
    });
    return undefined;
  };
  try {
    return await inSlot(settings.pool, attempt.signal, fetch);
  } catch (cause) {
    throw attempt.failure(cause);
  } finally {
    tracker?.stop();
    attempt.dispose();
  }
};

/**
 * Downloads models over HTTP(S), streamed to disk or extracted (docs/storage.md, "http and https"); a Content-Length
 * above `maxModelBytes` fails unread, a body that passes it is dropped (`too-large`, permanent).
 */
export const httpStorage = (options: HttpStorageOptions = {}): StorageProvider => {
  const settings: Settings = {
    ...options,
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    maxResumes: options.maxResumes ?? 5,
    streams: options.streams ?? 8,
    limits: options.limits ?? defaultDownloadLimits,
    pressures: storePressures(options.retry),
  };
  return {
    schemes: ['http', 'https'],
    download: (...args) => download(settings, ...args),
  };
};
