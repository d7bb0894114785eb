/**
 * readSmallFile: a small file read whole only if regular and within its cap — a settings file (a token, a
 * certificate, a kubeconfig: reached through the links a projected volume is made of) or a file in the model dir (a
 * marker, a server's model settings: never through a link).
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import { entryKind } from '../core/entry-kind';
import type { Handle } from './quick-calls';

const { O_RDONLY, O_NONBLOCK, O_NOCTTY, O_NOFOLLOW } = constants;

/**
 * The bytes of `path`, named `what` in errors (`the kubeconfig /etc/kube/config`): only a regular file (stat before
 * opening, so a device is never opened; fstat after, non-blocking, so a swapped-in FIFO never holds a thread), never
 * more than `maxBytes` (a file that grows meanwhile is refused), with `links: 'refuse'` never through a link
 * (`O_NOFOLLOW` in case one is swapped in). The Error names `what` and the reason, never the content.
 */
export const readSmallFile = async (
  path: string,
  maxBytes: number,
  what: string,
  // Followed for a mounted Secret or ConfigMap, refused for the model dir's neighbours.
  links: 'follow' | 'refuse',
): Promise<Buffer> => (await readSmallFileWithStats(path, maxBytes, what, links)).bytes;

/** `readSmallFile`, with the file's fstat as it was read (its mode, its owner). */
export const readSmallFileWithStats = async (
  path: string,
  maxBytes: number,
  what: string,
  links: 'follow' | 'refuse',
): Promise<{ readonly bytes: Buffer; readonly stats: Stats }> => {
  const refuse = (why: string): Error => new Error(`${what} ${why}; it is not read`);
  const before = await (links === 'follow' ? stat(path) : lstat(path));
  if (!before.isFile()) throw refuse(`is ${entryKind(before)}, not a regular file`);
  if (before.size > maxBytes) throw refuse(`is ${before.size} bytes, over ${maxBytes}`);
  const handle = await open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | (links === 'refuse' ? O_NOFOLLOW : 0));
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw refuse(`is ${entryKind(opened)}, not a regular file`);
    const bytes = await readToEnd(handle, opened.size, maxBytes);
    if (bytes === undefined) throw refuse(`is over ${maxBytes} bytes`);
    return { bytes, stats: opened };
  } finally {
    await handle.close();
  }
};

/**
 * The bytes of the open `handle` to its end, or undefined once it holds more than `maxBytes` (it grew while being
 * read). Sized by the fstat `size` (+1 to see the end); grown, to `maxBytes + 1` at most, only if the file grows.
 */
export const readToEnd = async (
  handle: Handle,
  size: number,
  maxBytes: number,
): Promise<Buffer | undefined> => {
  let buffer = Buffer.alloc(Math.min(size, maxBytes) + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length > maxBytes) return undefined;
      const grown = Buffer.alloc(Math.min(Math.max(length * 2, 65_536), maxBytes + 1));
      grown.set(buffer);
      buffer = grown;
    }
    const asked = buffer.length - length;
    const { bytesRead } = await handle.read(buffer, length, asked, length);
    length += bytesRead;
    // A regular file (both callers fstat it first) reads short only at its end: no second read to see the end.
    if (bytesRead < asked) return buffer.subarray(0, length);
  }
};
