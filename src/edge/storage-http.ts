/** httpStorage: the StorageProvider for http:// and https:// URLs; plain files, tar, tar.gz and zip archives. */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, readlink, realpath, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract as untar, type ReadEntry, type Unpack } from 'tar';
import * as yauzl from 'yauzl';
import { EffectError, httpStatusError, permanentError, retryableError } from '../core/errors';
import { redactUri } from '../core/storage-uri';
import type { StorageProvider } from '../ports';

/** Settings of httpStorage; timeouts in milliseconds. */
export interface HttpStorageOptions {
  /** Extra request headers by lower-case host name (see parseHostHeaders). */
  readonly headersByHost?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Longest wait for the response headers, connecting included (default 30 s). */
  readonly connectTimeoutMs?: number;
  /** Longest wait for the next bytes of the body (default 60 s). */
  readonly idleTimeoutMs?: number;
}

/** How a response body is stored: saved as one file, or extracted as a tar (maybe gzipped) or zip archive. */
export type BodyKind = 'file' | 'tar' | 'zip';

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
  const lowerPath = urlPath.toLowerCase();
  if (lowerPath.endsWith('.zip')) return 'zip';
  if (/\.(tar|tar\.gz|tgz)$/.test(lowerPath)) return 'tar';
  return 'file';
};

const maxRedirects = 10;
const maxErrorBodyBytes = 1024;
const maxZipLinkBytes = 4096;
const maxLinkHops = 40;

// Duck-typed, not `instanceof Error`: errors from node built-ins can come from another realm (jest's vm).
const fieldOf = (value: unknown, field: 'message' | 'cause' | 'code'): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;

const messageOf = (cause: unknown): string => {
  const message = fieldOf(cause, 'message');
  if (typeof message !== 'string') return String(cause);
  // fetch says only "fetch failed" / "terminated"; the reason (ECONNREFUSED, other side closed) is the cause.
  const inner = fieldOf(fieldOf(cause, 'cause'), 'message');
  return typeof inner === 'string' ? `${message} (${inner})` : message;
};

// While extracting, only these say "try again later"; the rest (EEXIST from a duplicate entry, ENOENT from
// a hard link to a missing entry) are the archive's own fault and would recur.
const transientCodes = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'ENOMEM']);

const isTransient = (cause: unknown): boolean => {
  const code = fieldOf(cause, 'code');
  return typeof code === 'string' && transientCodes.has(code);
};

/**
 * One download's cancellation and timers. Every failure funnels through `classify`, which knows why the
 * download stopped (caller abort, timeout, refused entry, lost connection, bad archive) better than the
 * AbortError or "terminated" that reaches the catch.
 */
class Attempt {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOut: 'connect' | 'idle' | undefined;
  private refusal: EffectError | undefined;
  private networkFailed = false;
  archivePhase = false;
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

  /** Stops everything and makes `error` the outcome, whatever error the abort then causes. */
  refuse(error: EffectError): void {
    this.refusal ??= error;
    this.controller.abort(error);
  }

  /**
   * The body as Buffers; each chunk re-arms the idle timer, and a failure is marked as the network's. The
   * timer stops with the body: extracting a downloaded zip may take longer than the idle timeout.
   */
  async *watch(body: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of body) {
        this.timer?.refresh();
        yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      }
      clearTimeout(this.timer);
    } catch (cause) {
      this.networkFailed = true;
      throw cause;
    }
  }

  classify(cause: unknown): EffectError {
    if (this.refusal !== undefined) return this.refusal;
    if (this.outer.aborted) return retryableError(`${this.what} aborted`, this.outer.reason);
    if (this.timedOut === 'connect') {
      return retryableError(`${this.what}: no response within ${this.connectTimeoutMs} ms`, cause);
    }
    if (this.timedOut === 'idle') {
      return retryableError(`${this.what}: no data received for ${this.idleTimeoutMs} ms`, cause);
    }
    if (cause instanceof EffectError) return cause;
    if (this.networkFailed)
      return retryableError(`${this.what}: connection lost: ${messageOf(cause)}`, cause);
    // The body arrived whole, so the same bytes would come again: a bad archive stays bad.
    if (this.archivePhase && !isTransient(cause)) {
      return permanentError(`${this.what}: invalid archive: ${messageOf(cause)}`, cause);
    }
    return retryableError(`${this.what}: ${messageOf(cause)}`, cause);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer.removeEventListener('abort', this.onOuterAbort);
  }
}

async function* noBody(): AsyncGenerator<Uint8Array> {}

const readPrefix = async (body: AsyncIterable<Uint8Array> | null, limit: number): Promise<string> => {
  if (body === null) return '';
  const chunks: Buffer[] = [];
  let length = 0;
  // Leaving the loop early cancels the rest of the body: an error page can be as big as a model.
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk));
    length += chunk.byteLength;
    if (length >= limit) break;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
};

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
    if (hop >= maxRedirects) throw permanentError(`${attempt.what}: more than ${maxRedirects} redirects`);
    current = new URL(location, current);
    if (current.protocol !== 'http:' && current.protocol !== 'https:') {
      throw permanentError(`${attempt.what}: redirect to unsupported protocol ${current.protocol}`);
    }
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
    throw permanentError(`${what}: cannot save a file named ${JSON.stringify(name)}`);
  }
  return name;
};

/** The entry's path relative to the target dir ('' for the dir itself); refuses anything that could escape. */
const entryPathOf = (name: string, refuse: (why: string) => never): string => {
  if (name.includes('\0')) refuse('its name contains NUL');
  if (name.startsWith('/') || name.startsWith('\\') || /^[a-zA-Z]:/.test(name))
    refuse('its path is absolute');
  // Backslashes count as separators: an archive made on Windows means them so, and tar treats them alike.
  const parts = name.split(/[/\\]+/).filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) refuse("its path contains '..'");
  return parts.join('/');
};

/** Where a symlink stored at `entryPath` points, relative to the target dir; refuses targets outside. */
const linkTargetOf = (entryPath: string, target: string, refuse: (why: string) => never): string => {
  if (target === '') refuse('its link target is empty');
  if (target.startsWith('/') || /^[a-zA-Z]:/.test(target)) refuse(`it links to the absolute path ${target}`);
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(entryPath), target));
  if (resolved === '..' || resolved.startsWith('../')) refuse(`it links to ${target}, outside the model dir`);
  return resolved;
};

/**
 * Per-archive bookkeeping of the symlinks seen, so no later entry is written through one (tar refuses
 * that too; this says which entry and why).
 */
class EntryChecker {
  private readonly links = new Set<string>();
  constructor(private readonly refuseWith: (message: string) => never) {}

  check(name: string, kind: 'file' | 'dir' | 'symlink' | 'hardlink' | 'other', linkTarget = ''): string {
    const refuse = (why: string): never =>
      this.refuseWith(`refusing archive entry ${JSON.stringify(name)}: ${why}`);
    const entryPath = entryPathOf(name, refuse);
    const parts = entryPath.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if (this.links.has(prefix)) refuse(`it would be written through the symlink ${prefix}`);
    }
    if (kind === 'other') refuse('it is not a file, directory or link');
    if (entryPath === '' && kind !== 'dir') refuse('it would replace the model dir');
    if (kind === 'symlink') {
      linkTargetOf(entryPath, linkTarget, refuse);
      this.links.add(entryPath);
    }
    if (kind === 'hardlink') {
      const target = entryPathOf(linkTarget, (why) => refuse(`its link target is refused: ${why}`));
      if (target === '') refuse('it hard-links the model dir');
      if ([...this.links].some((link) => target === link || target.startsWith(`${link}/`))) {
        refuse(`it hard-links through the symlink ${linkTarget}`);
      }
    }
    return entryPath;
  }
}

const tarKind = (entry: ReadEntry): 'file' | 'dir' | 'symlink' | 'hardlink' | 'other' => {
  switch (entry.type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return 'file';
    case 'Directory':
    case 'GNUDumpDir':
      return 'dir';
    case 'SymbolicLink':
      return 'symlink';
    case 'Link':
      return 'hardlink';
    default:
      return 'other';
  }
};

/** Passes a plain tar through and gunzips a gzipped one: the magic bytes decide, not the Content-Type. */
async function* gunzipIfGzipped(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const iterator = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await iterator.next();
    if (next.done === true) break;
    head = Buffer.concat([head, next.value]);
  }
  async function* all(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  if (head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* all();
    return;
  }
  const gunzip = createGunzip();
  const feeding = pipeline(all(), gunzip);
  // A feeding failure destroys gunzip, so it also surfaces from the loop below; this only avoids an
  // unhandled rejection.
  feeding.catch(() => undefined);
  for await (const chunk of gunzip) yield chunk as Buffer;
  await feeding;
}

/**
 * tar's Unpack as a node Writable. Handed to pipeline directly, it is not seen to finish when its last
 * writes (symlinks) complete after end(); here end waits for 'finish', which tar emits once every entry is
 * on disk.
 */
const unpackSink = (unpack: Unpack): Writable => {
  const sink = new Writable({
    write: (chunk: Buffer, _encoding, callback) => {
      if (unpack.write(chunk)) callback();
      else unpack.once('drain', () => callback());
    },
    final: (callback) => {
      unpack.once('finish', () => callback());
      unpack.end();
    },
  });
  unpack.on('error', (error: Error) => sink.destroy(error));
  return sink;
};

const extractTar = async (
  chunks: AsyncIterable<Buffer>,
  targetDir: string,
  attempt: Attempt,
): Promise<void> => {
  const refuse = (message: string): never => {
    throw permanentError(`${attempt.what}: ${message}`);
  };
  const checker = new EntryChecker(refuse);
  const unpack = untar({
    cwd: targetDir,
    strict: true,
    // As root, tar would chown entries to the archive's uids.
    preserveOwner: false,
    dmode: 0o755,
    filter: (_path, entry) => {
      const readEntry = entry as ReadEntry;
      try {
        checker.check(readEntry.path, tarKind(readEntry), readEntry.linkpath ?? '');
      } catch (error) {
        attempt.refuse(error instanceof EffectError ? error : permanentError(String(error)));
        return false;
      }
      // Directories 0755; files keep their rwx bits but lose setuid/setgid/sticky and group/other write.
      readEntry.mode = tarKind(readEntry) === 'dir' ? 0o755 : (readEntry.mode ?? 0o644) & 0o755;
      return true;
    },
  });
  await pipeline(chunks, gunzipIfGzipped, unpackSink(unpack), { signal: attempt.signal });
};

const readSmall = async (stream: AsyncIterable<unknown>, limit: number): Promise<Buffer | undefined> => {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length > limit) return undefined;
  }
  return Buffer.concat(chunks);
};

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

const extractZip = async (zipPath: string, targetDir: string, attempt: Attempt): Promise<void> => {
  const refuse = (message: string): never => {
    throw permanentError(`${attempt.what}: ${message}`);
  };
  const checker = new EntryChecker(refuse);
  // Symlinks are made last, so no file of the archive can be written through one.
  const links: Array<{ at: string; target: string }> = [];
  // decodeStrings off: yauzl would reject a bad name with a bare "invalid relative path"; we decode the
  // same way it does and refuse with the message every archive gets.
  const zip = await yauzl.openPromise(zipPath, {
    lazyEntries: true,
    autoClose: true,
    decodeStrings: false,
    validateEntrySizes: true,
  });
  try {
    for await (const entry of zip.eachEntry()) {
      if (attempt.signal.aborted) break;
      const name = yauzl.getFileNameLowLevel(
        entry.generalPurposeBitFlag,
        entry.fileNameRaw,
        entry.extraFields,
        false,
      );
      const problem = yauzl.validateFileName(name);
      const mode = entry.externalFileAttributes >>> 16;
      const kind = (mode & S_IFMT) === S_IFLNK ? 'symlink' : name.endsWith('/') ? 'dir' : 'file';
      // Our own check first: its message is the clearer; yauzl's catches whatever ours might miss.
      const at = kind === 'symlink' ? '' : checker.check(name, kind);
      if (problem !== null) refuse(`refusing archive entry ${JSON.stringify(name)}: ${problem}`);
      if (kind === 'symlink') {
        const target = await readSmall(await zip.openReadStreamPromise(entry), maxZipLinkBytes);
        if (target === undefined)
          refuse(`refusing archive entry ${JSON.stringify(name)}: its link target is too long`);
        const text = target!.toString('utf8');
        links.push({ at: checker.check(name, 'symlink', text), target: text });
      } else if (kind === 'dir') {
        await mkdir(path.join(targetDir, at), { recursive: true, mode: 0o755 });
      } else {
        const to = path.join(targetDir, at);
        await mkdir(path.dirname(to), { recursive: true, mode: 0o755 });
        const content = await zip.openReadStreamPromise(entry);
        // wx: a duplicate entry fails instead of silently replacing the first.
        await pipeline(content, createWriteStream(to, { flags: 'wx' }), { signal: attempt.signal });
      }
    }
  } finally {
    zip.close();
  }
  attempt.signal.throwIfAborted();
  for (const { at, target } of links) {
    const to = path.join(targetDir, at);
    await mkdir(path.dirname(to), { recursive: true, mode: 0o755 });
    await symlink(target, to);
  }
};

/** Resolves `rest` from the real dir `from`, following symlinks hop by hop; missing parts are taken as written. */
const resolveFrom = async (from: string, rest: string, hops: { left: number }): Promise<string> => {
  let current = from;
  for (const part of rest.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    const info = await lstat(next).catch(() => undefined);
    if (info?.isSymbolicLink() !== true) {
      current = next;
      continue;
    }
    if (--hops.left < 0) throw new Error('too many levels of symlinks');
    const target = await readlink(next);
    current = await resolveFrom(path.isAbsolute(target) ? '/' : current, target, hops);
  }
  return current;
};

/**
 * Checks every symlink of the extracted tree where it really leads. Each entry's own target was checked on
 * the way in, but links can combine (`a -> .` then `b -> a/..`) into a way out; this catches any such chain.
 */
const checkLinksInside = async (root: string, what: string, dir = root): Promise<void> => {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      await checkLinksInside(root, what, at);
    } else if (entry.isSymbolicLink()) {
      const shown = path.relative(root, at);
      let resolved: string;
      try {
        resolved = await resolveFrom(dir, await readlink(at), { left: maxLinkHops });
      } catch (cause) {
        throw permanentError(
          `${what}: refusing archive entry ${JSON.stringify(shown)}: ${messageOf(cause)}`,
          cause,
        );
      }
      const relative = path.relative(root, resolved);
      if (relative.startsWith('..') || path.isAbsolute(relative)) {
        throw permanentError(
          `${what}: refusing archive entry ${JSON.stringify(shown)}: it leads outside the model dir`,
        );
      }
    }
  }
};

const download = async (
  options: Required<Omit<HttpStorageOptions, 'headersByHost'>> & Pick<HttpStorageOptions, 'headersByHost'>,
  uri: string,
  targetDir: string,
  signal: AbortSignal,
): Promise<void> => {
  const what = `GET ${redactUri(uri)}`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch (cause) {
    throw permanentError(`${redactUri(uri)} is not a valid URL`, cause);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw permanentError(`${redactUri(uri)} is not an http or https URL`);
  }
  const attempt = new Attempt(what, signal, options.connectTimeoutMs, options.idleTimeoutMs);
  // Next to the extracted files, not in the model store's parent dir: if we crash, the store deletes the
  // whole unfinished target dir, temp file included. The random name cannot collide with an entry.
  const zipPath = path.join(targetDir, `.modelsync-${randomBytes(8).toString('hex')}.zip`);
  try {
    attempt.arm('connect');
    const response = await get(url, options.headersByHost ?? new Map(), attempt);
    attempt.arm('idle');
    if (!response.ok) {
      throw httpStatusError(what, response.status, await readPrefix(response.body, maxErrorBodyBytes));
    }
    const chunks = attempt.watch(response.body ?? noBody());
    // The URL as written names the model; a redirect target is often an opaque blob or presigned URL.
    const kind = bodyKind(response.headers.get('content-type'), url.pathname);
    if (kind === 'file') {
      const to = path.join(targetDir, fileNameOf(url, what));
      await pipeline(chunks, createWriteStream(to, { flags: 'wx' }), { signal: attempt.signal });
      return;
    }
    const root = await realpath(targetDir);
    if (kind === 'tar') {
      attempt.archivePhase = true;
      await extractTar(chunks, root, attempt);
    } else {
      await pipeline(chunks, createWriteStream(zipPath, { flags: 'wx' }), { signal: attempt.signal });
      attempt.archivePhase = true;
      await extractZip(zipPath, root, attempt);
      await rm(zipPath, { force: true });
    }
    await checkLinksInside(root, what);
  } catch (cause) {
    throw attempt.classify(cause);
  } finally {
    attempt.dispose();
    await rm(zipPath, { force: true });
  }
};

/**
 * Downloads models over HTTP(S), streaming the body to disk (never whole in memory). Non-2xx statuses become
 * httpStatusError; timeouts and lost connections are retryable; archives are extracted into `targetDir`, and
 * an entry that would land or link outside it fails the download permanently, naming the entry.
 */
export const httpStorage = (options: HttpStorageOptions = {}): StorageProvider => {
  const settings = {
    headersByHost: options.headersByHost,
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
  };
  return {
    schemes: ['http', 'https'],
    download: (uri, targetDir, signal) => download(settings, uri, targetDir, signal),
  };
};
