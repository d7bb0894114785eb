/** readConfigFile: models.json read safely (only a regular file, bounded in size and time), as UTF-8 text. */
import * as E from 'fp-ts/Either';
import { constants, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { configFileName, dataLinkName } from '../core/config-files';
import {
  errorCode,
  errorMessage,
  invalidEncoding,
  readFailed,
  tooLarge,
  type ByteLimit,
  type ConfigError,
} from '../core/errors';
import { jsonText } from '../core/json/json-bytes';
import { within } from '../core/waits';
import { entryKind, quick, readToEnd, type Handle } from '../fs';
import type { ConfigRead } from '../ports';

/** How models.json is read. */
export interface ConfigReadOptions {
  /** A bigger file is refused without being read (default 32 MiB). */
  readonly maxBytes?: number;
  /** What the user calls `maxBytes`, named in the refusal (the CLI's flag; default `maxBytes`). */
  readonly maxBytesName?: string;
  /** Opens a file (default: fs `open`); tests inject one that hangs or is denied. */
  readonly openFile?: (path: string, flags: number) => Promise<Handle>;
}

// 32 MiB: a 100,000-model file, pretty-printed, is 18.6 MB.
const defaultMaxBytes = 32 * 2 ** 20;
// Non-blocking: opening a FIFO that nobody writes would otherwise block a libuv thread (and the watcher) forever.
const openFlags = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

const notRegular = (file: string, stats: Stats): ConfigError =>
  readFailed(
    file,
    'ENOTREG',
    `it is ${entryKind(stats)}, not a regular file; modelsync reads only regular files`,
  );

// What an errno means to someone fixing the volume (node's messages repeat the path, which the line names already).
const errnoWords: Readonly<Record<string, string>> = {
  EACCES: 'permission denied (EACCES)',
  EPERM: 'operation not permitted (EPERM)',
  ELOOP: 'too many levels of symbolic links (ELOOP)',
  ENOTDIR: 'a part of its path is not a directory (ENOTDIR)',
  EIO: 'an I/O error (EIO)',
};

/** An fs failure as a ReadFailed, its reason in words; `what` names the entry when it is not models.json. */
const fsFailure = (file: string, cause: unknown, what = ''): ConfigError => {
  const code = errorCode(cause) ?? 'EUNKNOWN';
  return readFailed(file, code, `${what}${errnoWords[code] ?? errorMessage(cause)}`);
};

/** Why `path` cannot be read, in words: a dangling link is told from a missing file. */
const readError = async (file: string, path: string, cause: unknown): Promise<ConfigError> => {
  const code = errorCode(cause) ?? 'EUNKNOWN';
  if (code !== 'ENOENT') return fsFailure(file, cause);
  const target = await quick.readlink(path).catch(() => undefined);
  const reason =
    target === undefined ? 'it does not exist' : `it is a link to ${target}, which does not exist`;
  return readFailed(file, code, reason);
};

/**
 * The bytes of `path` if it is a regular file of at most `limit.maxBytes`: checked with stat before opening (a
 * FIFO, socket or device is never opened) and with fstat after (it may have been swapped in between), then read
 * to the end (`readToEnd`: never past `maxBytes + 1` bytes, it may grow while being read).
 */
const readRegularFile = async (
  file: string,
  path: string,
  limit: ByteLimit,
  openFile: (path: string, flags: number) => Promise<Handle>,
): Promise<E.Either<ConfigError, Uint8Array>> => {
  const { maxBytes } = limit;
  const before = await quick.stat(path);
  if (!before.isFile()) return E.left(notRegular(file, before));
  if (before.size > maxBytes) return E.left(tooLarge(file, before.size, limit));
  const handle = await openFile(path, openFlags);
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) return E.left(notRegular(file, opened));
    const bytes = await readToEnd(handle, opened.size, maxBytes);
    if (bytes !== undefined) return E.right(bytes);
    return E.left(tooLarge(file, Math.max(maxBytes + 1, (await handle.stat()).size), limit));
  } finally {
    // Not waited for: the bytes are read, and the swap's load request should not wait for a close.
    void handle.close().catch(() => undefined);
  }
};

/**
 * The file a read should open: through the `..data` link when kubelet manages the dir, so one read sees one
 * version. A `..data` that dangles or leads outside the config dir is refused: kubelet points it at a
 * `..<timestamp>` dir beside it, and anything else is a broken or tampered volume.
 */
const configFile = async (dir: string, file: string): Promise<E.Either<ConfigError, string>> => {
  const link = join(dir, dataLinkName);
  // Both at once: each is a trip through libuv's pool on the way from a swap to its load request.
  const [resolved, dirResolved] = await Promise.allSettled([quick.realpath(link), quick.realpath(dir)]);
  if (resolved.status === 'rejected') {
    const cause: unknown = resolved.reason;
    if (errorCode(cause) === 'ENOTDIR') {
      // The part that is no directory may be the config dir itself (`--config-dir` naming models.json): say so.
      const found = await quick.stat(dir).catch(() => undefined);
      if (found !== undefined && !found.isDirectory())
        return E.left(
          readFailed(
            file,
            'ENOTDIR',
            `the config dir ${dir} is ${entryKind(found)}, not a directory (--config-dir names the dir the ConfigMap is mounted at)`,
          ),
        );
    }
    if (errorCode(cause) !== 'ENOENT') return E.left(fsFailure(file, cause, `${dataLinkName}: `));
    const linked = await quick.readlink(link).catch(() => undefined);
    if (linked === undefined) return E.right(join(dir, configFileName));
    return E.left(readFailed(file, 'ENOENT', `${dataLinkName} is a link to ${linked}, which does not exist`));
  }
  const target = resolved.value;
  if (dirResolved.status === 'rejected') throw dirResolved.reason;
  if (dirname(target) !== dirResolved.value) {
    return E.left(
      readFailed(
        file,
        'EOUTSIDE',
        `${dataLinkName} leads to ${target}, not to a version dir beside it in the config dir; it is not read`,
      ),
    );
  }
  return E.right(join(target, configFileName));
};

const readOnce = async (
  dir: string,
  file: string,
  limit: ByteLimit,
  openFile: (path: string, flags: number) => Promise<Handle>,
): Promise<ConfigRead> => {
  const path = await configFile(dir, file);
  if (E.isLeft(path)) return path;
  const bytes = await readRegularFile(file, path.right, limit, openFile).catch(async (cause: unknown) =>
    E.left(await readError(file, path.right, cause)),
  );
  if (E.isLeft(bytes)) return bytes;
  const text = jsonText(bytes.right);
  return E.isLeft(text) ? E.left(invalidEncoding(file, text.left)) : E.right({ file, text: text.right });
};

const isMissing = (read: ConfigRead): boolean =>
  E.isLeft(read) && read.left._tag === 'ReadFailed' && read.left.code === 'ENOENT';

/**
 * Reads models.json as UTF-8 text (a byte-order mark dropped): only a regular file of at most `maxBytes`, never
 * blocking on a FIFO. Retries when a `..data` target vanished between resolving and reading (a swap raced us).
 * Never rejects: every failure is a ConfigError that names the file and says why.
 */
export const readConfigFile = async (dir: string, options: ConfigReadOptions = {}): Promise<ConfigRead> => {
  const { maxBytes = defaultMaxBytes, maxBytesName = 'maxBytes', openFile = quick.open } = options;
  const limit: ByteLimit = { maxBytes, limit: maxBytesName };
  const file = join(dir, configFileName);
  let linkedBefore: string | undefined;
  for (let attempt = 1; ; attempt++) {
    const read = await readOnce(dir, file, limit, openFile).catch((cause: unknown) =>
      E.left(fsFailure(file, cause)),
    );
    if (!isMissing(read) || attempt >= maxAttempts) return read;
    // Read again while `..data` moves on: swaps in quick succession can each remove the version dir a read had
    // resolved (three tries lost to swaps 5-45 ms apart on a busy machine). A missing file under a `..data` that
    // stays put is missing.
    const linked = await quick.readlink(join(dir, dataLinkName)).catch(() => undefined);
    if (linked === undefined || (attempt >= 3 && linked === linkedBefore)) return read;
    linkedBefore = linked;
  }
};

/** Reads of one models.json lost to swaps before the miss is reported (each swap a new `..data`). */
const maxAttempts = 20;

/**
 * `read` with a deadline of `timeoutMs` (a hung NFS or FUSE mount never answers). While a read that missed it is
 * still pending, no new one starts: each would hold one of libuv's four threads for good. When it returns at
 * last, `onLateReturn` is called so the caller can read again.
 */
export const withDeadline = (
  read: () => Promise<ConfigRead>,
  file: string,
  timeoutMs: number,
  onLateReturn: () => void,
): (() => Promise<ConfigRead>) => {
  const timedOut = readFailed(
    file,
    'ETIMEDOUT',
    `reading it has not finished after ${timeoutMs} ms (a hung file system?); it is read again once that read returns`,
  );
  let pending: Promise<unknown> | undefined;
  return async () => {
    if (pending !== undefined) return E.left(timedOut);
    const attempt = read().catch((cause: unknown) =>
      E.left(readFailed(file, errorCode(cause) ?? 'EUNKNOWN', errorMessage(cause))),
    );
    return within(attempt, timeoutMs, () => {
      pending = attempt.finally(() => {
        pending = undefined;
        onLateReturn();
      });
      return E.left(timedOut);
    });
  };
};
