/** httpStorage: the StorageProvider for http:// and https:// URLs: one file saved, or a tar, tar.gz or zip extracted. */
import path from 'node:path';
import { permanentError, type EffectError } from '../core/errors';
import { redactUri } from '../core/storage-uri';
import type { StorageProvider } from '../ports';
import { archiveFormatOf, extractStream, type ArchiveFormat } from './archive/extract';
import { defaultDownloadLimits, type DownloadLimits } from './download-limits';
import { writeNewFile } from './durable-fs';
import { httpUrl, responseStatusError } from './http-call';
import { TransferGuard } from './transfer-guard';
import { transportError } from './transport-error';

/** Settings of httpStorage; timeouts in milliseconds. */
export interface HttpStorageOptions {
  /** Extra request headers by lower-case host name (see parseHostHeaders). */
  readonly headersByHost?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Longest wait for the response headers, connecting included (default 30 s). */
  readonly connectTimeoutMs?: number;
  /** Longest wait for the next bytes of the body (default 60 s). */
  readonly idleTimeoutMs?: number;
  /** The model cap, the archive caps and the minimum rate (default: the flags' defaults). */
  readonly limits?: DownloadLimits;
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

const maxRedirects = 10;

/**
 * One download's cancellation and timers. Its failures go through `failure`, which knows why the download
 * stopped (caller abort, timeout, lost connection) better than the AbortError or "terminated" that reaches
 * the catch.
 */
class Attempt {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOut: 'connect' | 'idle' | undefined;
  private stopped: EffectError | undefined;
  private connectionLost = false;
  /** Aborts on the caller's abort and on either timeout. */
  readonly signal = this.controller.signal;
  private readonly onOuterAbort = (): void => this.controller.abort(this.outer.reason);

  constructor(
    readonly what: string,
    private readonly outer: AbortSignal,
    private readonly connectTimeoutMs: number,
    private readonly idleTimeoutMs: number,
  ) {
    outer.addEventListener('abort', this.onOuterAbort, { once: true });
    if (outer.aborted) this.controller.abort(outer.reason);
  }

  /** Starts (or restarts) the wait for response headers, or for body bytes. */
  arm(phase: 'connect' | 'idle'): void {
    clearTimeout(this.timer);
    const ms = phase === 'connect' ? this.connectTimeoutMs : this.idleTimeoutMs;
    this.timer = setTimeout(() => {
      this.timedOut = phase;
      this.controller.abort();
    }, ms);
  }

  /** Stops the download, to fail with `error` (the transfer guard found it too slow). */
  stop(error: EffectError): void {
    this.stopped ??= error;
    this.controller.abort();
  }

  /**
   * The body; each chunk re-arms the idle timer, and a failure is marked as the connection's. The timer stops
   * with the body: extracting a downloaded zip may take longer than the idle timeout.
   */
  async *watch(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of body) {
        this.timer?.refresh();
        yield chunk;
      }
      clearTimeout(this.timer);
    } catch (cause) {
      this.connectionLost = true;
      throw cause;
    }
  }

  /** The EffectError this download failed with, given what reached the catch. */
  failure(cause: unknown): EffectError {
    if (this.stopped !== undefined && !this.outer.aborted) return this.stopped;
    const timeout =
      this.timedOut === 'connect'
        ? `timed out: no response within ${this.connectTimeoutMs} ms`
        : this.timedOut === 'idle'
          ? `timed out: no data received for ${this.idleTimeoutMs} ms`
          : undefined;
    const state = {
      what: this.what,
      aborted: this.outer.aborted,
      timeout,
      connectionLost: this.connectionLost,
    };
    return transportError(this.outer.aborted ? this.outer.reason : cause, state);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer.removeEventListener('abort', this.onOuterAbort);
  }
}

async function* noBody(): AsyncGenerator<Uint8Array> {}

/**
 * GET with redirects followed by hand, so each hop gets the headers of its own host: a token for the
 * model registry must not follow a redirect to a CDN or a presigned bucket URL.
 */
const get = async (
  url: URL,
  headersByHost: ReadonlyMap<string, Readonly<Record<string, string>>>,
  attempt: Attempt,
): Promise<Response> => {
  let current = url;
  for (let hop = 0; ; hop++) {
    const response = await fetch(current, {
      // identity: fetch would otherwise gunzip a Content-Encoding: gzip tarball behind our back.
      headers: { 'accept-encoding': 'identity', ...headersByHost.get(current.hostname) },
      redirect: 'manual',
      signal: attempt.signal,
    });
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || location === null) return response;
    await response.body?.cancel();
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

/** The Content-Length of `response` when it has a usable one. */
const contentLengthOf = (response: Response): number | undefined => {
  const text = response.headers.get('content-length');
  return text !== null && /^\d+$/.test(text) ? Number(text) : undefined;
};

const download = async (
  options: Required<Omit<HttpStorageOptions, 'headersByHost'>> & Pick<HttpStorageOptions, 'headersByHost'>,
  uri: string,
  targetDir: string,
  signal: AbortSignal,
): Promise<void> => {
  const what = `GET ${redactUri(uri)}`;
  const url = httpUrl(uri, what);
  const { limits } = options;
  const attempt = new Attempt(what, signal, options.connectTimeoutMs, options.idleTimeoutMs);
  const guard = new TransferGuard({
    what,
    maxBytes: limits.maxModelBytes,
    minRate: limits.minRate,
    onTooSlow: (error) => attempt.stop(error),
  });
  try {
    attempt.arm('connect');
    const response = await get(url, options.headersByHost ?? new Map(), attempt);
    attempt.arm('idle');
    if (!response.ok) throw await responseStatusError(what, response);
    const announced = contentLengthOf(response);
    if (announced !== undefined) {
      try {
        guard.admit(announced);
      } catch (error) {
        await response.body?.cancel().catch(() => undefined);
        throw error;
      }
    }
    const body = guard.count(attempt.watch(response.body ?? noBody()));
    // The URL as written names the model; a redirect target is often an opaque blob or presigned URL.
    const kind = bodyKind(response.headers.get('content-type'), url.pathname);
    if (kind === 'file') {
      const to = path.join(targetDir, fileNameOf(url, what));
      await writeNewFile(body, to, attempt.signal, `${what}: cannot save ${to}`);
    } else {
      await extractStream(body, kind, targetDir, { what, signal: attempt.signal, limits });
    }
  } catch (cause) {
    throw attempt.failure(cause);
  } finally {
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
  const settings = {
    headersByHost: options.headersByHost,
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    limits: options.limits ?? defaultDownloadLimits,
  };
  return {
    schemes: ['http', 'https'],
    download: (uri, targetDir, signal) => download(settings, uri, targetDir, signal),
  };
};
