/** readSmallFile: a settings file (a token, a certificate, a kubeconfig) read whole, only if regular and small. */
import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { entryKind } from './no-follow';

// Non-blocking: a FIFO put where a token file belongs would otherwise hold a libuv thread until someone writes it.
const openFlags = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * The bytes of `path`, `what` (`the kubeconfig`, `the token file`) for the error: only a regular file (stat before
 * opening, fstat after: a FIFO, a socket or a device is never read), and never more than `maxBytes` (read to
 * `maxBytes + 1` at most: a file that grows meanwhile is refused, not followed). Throws an Error naming `what`,
 * the path and the reason, never the content.
 */
export const readSmallFile = async (path: string, maxBytes: number, what: string): Promise<Buffer> => {
  const refuse = (why: string): Error => new Error(`${what} ${path} ${why}; it is not read`);
  const before = await stat(path);
  if (!before.isFile()) throw refuse(`is ${entryKind(before)}, not a regular file`);
  if (before.size > maxBytes) throw refuse(`is ${before.size} bytes, over ${maxBytes}`);
  const handle = await open(path, openFlags);
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw refuse(`is ${entryKind(opened)}, not a regular file`);
    // Sized by fstat (+1 to see the end); grown, to maxBytes + 1 at most, only if the file grows meanwhile.
    let buffer = Buffer.alloc(Math.min(opened.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > maxBytes) throw refuse(`is over ${maxBytes} bytes`);
        buffer = Buffer.concat([buffer, Buffer.alloc(Math.min(length, maxBytes + 1 - length))]);
      }
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) return buffer.subarray(0, length);
      length += bytesRead;
    }
  } finally {
    await handle.close();
  }
};
