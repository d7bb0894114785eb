/** httpStorage: the StorageProvider for http:// and https:// URLs: one file saved, or a tar, tar.gz or zip extracted. */
import path from 'node:path';
import { request } from 'undici';
import { hostKey, sameEndpoint } from '../../core/endpoint';
import { permanentError, type EffectError } from '../../core/errors';
import { redactUri } from '../../core/storage-uri';
import type { DownloadProgress, StorageProvider } from '../../ports';
import { archiveFormatOf, extractStream, type ArchiveFormat } from '../archive/extract';
import { defaultDownloadLimits, type DownloadLimits } from '../download-limits';
import { writeNewFile } from '../../fs';
import {
  discardBody,
  httpUrl,
  isOk,
  responseStatusError,
  type Network,
  timeoutOf,
  transportError,
} from '../../net';
import { contentLengthOf, headerOf, resumableBody, type BodyResponse } from './resumable-body';
import { TransferGuard } from '../transfer-guard';
import { trackProgress } from '../transfer-progress';

/** Every field has a default (the flags'), so a test or an integrator sets only what it is about; times in ms. */
export interface HttpStorageOptions {
  /** Extra request headers by lower-case host name (see parseHostHeaders). */
  readonly headersByHost?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Longest wait for the response headers, connecting included (default 30 s). */
  readonly connectTimeoutMs?: number;
  /** Longest wait for the next bytes of the body (default 60 s). */
  readonly idleTimeoutMs?: number;
  /** The model cap, the archive caps and the minimum rate (default: the flags' defaults). */
  readonly limits?: DownloadLimits;
  /** Proxies, CAs and pooled connections (default: undici's global pool, direct). */
  readonly network?: Network;
  /** Resumes of a cut body in a row that may each bring little before the download fails (default 5). */
  readonly maxResumes?: number;
}

const httpSchemes = ['http', 'https'];

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

const maxRedirects = 10;
const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/**
 * One download's cancellation. Its failures go through `failure`, which knows why the download stopped (caller
 * abort, a timeout, lost connection, too slow) better than the error that reaches the catch.
 */
class Attempt {
  private readonly controller = new AbortController();
  private stopped: EffectError | undefined;
  private connectionLost = false;
  /** Aborts on the caller's abort and when the transfer guard stops the download. */
  readonly signal = this.controller.signal;
  private readonly onOuterAbort = (): void => this.controller.abort(this.outer.reason);

  constructor(
    readonly what: string,
    private readonly outer: AbortSignal,
    private readonly timeouts: { readonly connectTimeoutMs: number; readonly idleTimeoutMs: number },
  ) {
    outer.addEventListener('abort', this.onOuterAbort, { once: true });
    if (outer.aborted) this.controller.abort(outer.reason);
  }

  /** Stops the download, to fail with `error` (the transfer guard found it too slow). */
  stop(error: EffectError): void {
    this.stopped ??= error;
    this.controller.abort();
  }

  /** The body; a failure is marked as the connection's. */
  async *watch(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    try {
      yield* body;
    } catch (cause) {
      this.connectionLost = true;
      throw cause;
    }
  }

  /** The EffectError this download failed with, given what reached the catch. */
  failure(cause: unknown): EffectError {
    if (this.stopped !== undefined && !this.outer.aborted) return this.stopped;
    const timeout = timeoutOf(cause);
    const { idleTimeoutMs, connectTimeoutMs } = this.timeouts;
    const state = {
      what: this.what,
      aborted: this.outer.aborted,
      timeout:
        timeout === undefined
          ? undefined
          : timeout === 'body'
            ? `timed out: no data received for ${idleTimeoutMs} ms`
            : `timed out: no response within ${connectTimeoutMs} ms`,
      connectionLost: this.connectionLost,
    };
    return transportError(this.outer.aborted ? this.outer.reason : cause, state);
  }

  dispose(): void {
    this.outer.removeEventListener('abort', this.onOuterAbort);
  }
}

type Settings = Required<Omit<HttpStorageOptions, 'headersByHost' | 'network'>> &
  Pick<HttpStorageOptions, 'headersByHost' | 'network'>;

/**
 * The configured headers a hop to `hop` gets, on a download of `origin` (the URI as models.json names it): its
 * host's `<host>-headers` at the scheme and port the URI names, and nothing anywhere else. A redirect chose the
 * hop, not the config: another host (its own headers neither), another port or https → http gets none.
 */
const credentialsFor = (settings: Settings, origin: URL, hop: URL): Readonly<Record<string, string>> =>
  sameEndpoint(origin, hop) ? (settings.headersByHost?.get(hostKey(origin.hostname)) ?? {}) : {};

/**
 * GET with redirects followed by hand, so that the configured headers go only to the URI's own endpoint (see
 * credentialsFor): a registry token must not follow a redirect to a CDN, a presigned bucket URL, another port or
 * plain http. `extraHeaders` (ranges) go to every hop.
 */
const get = async (
  url: URL,
  settings: Settings,
  attempt: Attempt,
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<BodyResponse> => {
  let current = url;
  for (let hop = 0; ; hop++) {
    const response = await request(current, {
      method: 'GET',
      // identity: a Content-Encoding: gzip tarball is stored as it is, never gunzipped on the way.
      headers: {
        'accept-encoding': 'identity',
        ...credentialsFor(settings, url, current),
        ...extraHeaders,
      },
      signal: attempt.signal,
      headersTimeout: settings.connectTimeoutMs,
      bodyTimeout: settings.idleTimeoutMs,
      ...(settings.network !== undefined ? { dispatcher: settings.network.dispatcherFor(current) } : {}),
    });
    const location = headerOf(response.headers, 'location');
    const answer = { status: response.statusCode, headers: response.headers, body: response.body };
    if (!redirectStatuses.has(answer.status) || location === undefined) return answer;
    await discardBody(answer);
    if (hop >= maxRedirects) {
      throw permanentError('invalid-response', `${attempt.what}: more than ${maxRedirects} redirects`);
    }
    current = httpUrl(location, `${attempt.what}: redirect`, current);
  }
};

const fileNameOf = (url: URL, what: string): string => {
  const segment = url.pathname.slice(url.pathname.lastIndexOf('/') + 1);
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    name = segment;
  }
  if (name === '') return 'model';
  if (name === '.' || name === '..' || /[/\\\0]/.test(name)) {
    throw permanentError('refused', `${what}: cannot save a file named ${JSON.stringify(name)}`);
  }
  return name;
};

const download = async (
  settings: Settings,
  uri: string,
  targetDir: string,
  signal: AbortSignal,
  progress?: (progress: DownloadProgress) => void,
): Promise<void> => {
  const what = `GET ${redactUri(uri)}`;
  const url = httpUrl(uri, what);
  const { limits } = settings;
  const attempt = new Attempt(what, signal, settings);
  const guard = new TransferGuard({
    what,
    maxBytes: limits.maxModelBytes,
    minRate: limits.minRate,
    onTooSlow: (error) => attempt.stop(error),
    space: { dir: targetDir, check: limits.spaceCheck },
  });
  let tracker: { readonly stop: () => void } | undefined;
  try {
    const response = await get(url, settings, attempt);
    if (!isOk(response)) throw await responseStatusError(what, response);
    const announced = contentLengthOf(response.headers);
    if (announced !== undefined) {
      try {
        await guard.admit(announced);
      } catch (error) {
        await discardBody(response);
        throw error;
      }
    }
    tracker = trackProgress({
      bytes: () => guard.total,
      totalBytes: () => announced,
      everyMs: limits.progressIntervalMs,
      report: progress,
    });
    const reopen = async (headers: Readonly<Record<string, string>>): Promise<BodyResponse> => {
      const again = await get(url, settings, attempt, headers);
      if (isOk(again) || again.status === 416) return again;
      throw await responseStatusError(what, again);
    };
    const whole = resumableBody(response, {
      what,
      signal: attempt.signal,
      reopen,
      maxResumes: settings.maxResumes,
    });
    const body = guard.count(attempt.watch(whole));
    // The URL as written names the model; a redirect target is often an opaque blob or presigned URL.
    const kind = bodyKind(headerOf(response.headers, 'content-type') ?? null, url.pathname);
    if (kind === 'file') {
      const to = path.join(targetDir, fileNameOf(url, what));
      await writeNewFile(body, to, attempt.signal, `${what}: cannot save ${to}`, announced);
    } else {
      await extractStream(body, kind, targetDir, { what, signal: attempt.signal, limits });
    }
  } catch (cause) {
    throw attempt.failure(cause);
  } finally {
    tracker?.stop();
    attempt.dispose();
  }
};

/**
 * Downloads models over HTTP(S), streaming the body to disk (never whole in memory). A non-2xx status is an
 * `http-status` EffectError; timeouts (`timeout`: no headers, no bytes, or fewer than the minimum rate over its
 * window) and lost connections (`network`) are retryable; a Content-Length above `maxModelBytes` fails before the
 * body is read and a body that passes it is dropped (`too-large`, permanent). Archives are extracted into
 * `targetDir` (see extractStream), and an entry that would land or link outside it fails the download permanently
 * (`refused`), naming the entry.
 */
export const httpStorage = (options: HttpStorageOptions = {}): StorageProvider => {
  const settings: Settings = {
    headersByHost: options.headersByHost,
    network: options.network,
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    maxResumes: options.maxResumes ?? 5,
    limits: options.limits ?? defaultDownloadLimits,
  };
  return {
    schemes: httpSchemes,
    download: (uri, targetDir, signal, progress) => download(settings, uri, targetDir, signal, progress),
  };
};
