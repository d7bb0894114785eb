/** jsonText: the bytes of a JSON file as text, if they are UTF-8 (RFC 8259 §8.1), or what they are instead. */
import * as E from 'fp-ts/Either';

const utf8 = new TextDecoder('utf-8', { fatal: true });

const hex = (byte: number): string => `0x${byte.toString(16).toUpperCase().padStart(2, '0')}`;

/** The UTF encoding other than UTF-8 that `bytes` starts with: by its byte-order mark, or by NULs around ASCII. */
const otherUnicode = (b: Uint8Array): string | undefined => {
  const [b0, b1, b2, b3] = [b[0], b[1], b[2], b[3]];
  if (b0 === 0x00 && b1 === 0x00 && b2 === 0xfe && b3 === 0xff)
    return 'UTF-32 big-endian text (with a byte-order mark)';
  if (b0 === 0xff && b1 === 0xfe && b2 === 0x00 && b3 === 0x00)
    return 'UTF-32 little-endian text (with a byte-order mark)';
  if (b0 === 0xfe && b1 === 0xff) return 'UTF-16 big-endian text (with a byte-order mark)';
  if (b0 === 0xff && b1 === 0xfe) return 'UTF-16 little-endian text (with a byte-order mark)';
  // JSON text starts with an ASCII character: its NUL bytes give the encoding away (RFC 4627 §3).
  if (b.length >= 4 && b0 === 0 && b1 === 0 && b2 === 0 && b3 !== 0) return 'UTF-32 big-endian text';
  if (b.length >= 4 && b0 !== 0 && b1 === 0 && b2 === 0 && b3 === 0) return 'UTF-32 little-endian text';
  if (b.length >= 2 && b0 === 0 && b1 !== 0) return 'UTF-16 big-endian text';
  if (b.length >= 2 && b0 !== 0 && b1 === 0) return 'UTF-16 little-endian text';
  return undefined;
};

const lossy = new TextDecoder('utf-8', { ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * The offset of the first byte that starts no valid UTF-8 sequence, or -1 when `bytes` is valid UTF-8: where the
 * lossy decoder's first U+FFFD stands that the bytes do not spell (EF BF BD). Before it the text is valid UTF-8, so
 * re-encoding it gives back its bytes, and their count is the offset.
 */
export const invalidUtf8At = (bytes: Uint8Array): number => {
  const text = lossy.decode(bytes);
  let [offset, from] = [0, 0];
  for (let at = text.indexOf('\uFFFD'); at !== -1; at = text.indexOf('\uFFFD', from)) {
    offset += encoder.encode(text.slice(from, at)).length;
    if (bytes[offset] !== 0xef || bytes[offset + 1] !== 0xbf || bytes[offset + 2] !== 0xbd) return offset;
    [offset, from] = [offset + 3, at + 1];
  }
  return -1;
};

/**
 * The text of a JSON file's bytes: UTF-8, with a leading byte-order mark dropped (editors on Windows write one).
 * Anything else is the Left, saying what the bytes are instead (UTF-16 or UTF-32 text, binary data with NUL
 * bytes, or which byte breaks UTF-8) in words that quote no byte of text beyond the one at fault.
 */
export const jsonText = (bytes: Uint8Array): E.Either<string, string> => {
  const unicode = otherUnicode(bytes);
  if (unicode !== undefined) return E.left(unicode);
  const nul = bytes.indexOf(0);
  if (nul !== -1) return E.left(`binary data, not text (a NUL byte at offset ${nul})`);
  try {
    return E.right(utf8.decode(bytes));
  } catch {
    const at = invalidUtf8At(bytes);
    const byte = bytes[at];
    return E.left(
      byte === undefined
        ? 'not valid UTF-8 text'
        : `not valid UTF-8 text (byte ${hex(byte)} at offset ${at}; Latin-1 or Windows-1252?)`,
    );
  }
};
