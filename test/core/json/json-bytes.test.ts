/** Tests of jsonText: UTF-8 with or without a BOM is text; UTF-16, UTF-32, NULs and broken UTF-8 are named. */
import { right } from 'fp-ts/Either';
import { invalidUtf8At, jsonText } from '../../../src/core/json/json-bytes';

const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);
const utf16 = (text: string, endian: 'le' | 'be', bom: boolean): Uint8Array => {
  const units = [...(bom ? [0xfeff] : []), ...Array.from(text, (c) => c.charCodeAt(0))];
  return Uint8Array.from(units.flatMap((u) => (endian === 'le' ? [u & 0xff, u >> 8] : [u >> 8, u & 0xff])));
};

describe('jsonText', () => {
  it('reads UTF-8, multi-byte characters included', () => {
    expect(jsonText(new TextEncoder().encode('["é€😀"]'))).toEqual(right('["é€😀"]'));
  });

  it('drops a UTF-8 byte-order mark, as Windows editors write one', () => {
    expect(jsonText(Uint8Array.from([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('[]')]))).toEqual(
      right('[]'),
    );
  });

  it.each([
    [
      'UTF-16 little-endian with a BOM',
      utf16('[]', 'le', true),
      'UTF-16 little-endian text (with a byte-order mark)',
    ],
    [
      'UTF-16 big-endian with a BOM',
      utf16('[]', 'be', true),
      'UTF-16 big-endian text (with a byte-order mark)',
    ],
    ['UTF-16 little-endian without a BOM', utf16('[{}]', 'le', false), 'UTF-16 little-endian text'],
    ['UTF-16 big-endian without a BOM', utf16('[{}]', 'be', false), 'UTF-16 big-endian text'],
    [
      'UTF-32 little-endian with a BOM',
      bytes(0xff, 0xfe, 0, 0, 0x5b, 0, 0, 0),
      'UTF-32 little-endian text (with a byte-order mark)',
    ],
    ['UTF-32 big-endian without a BOM', bytes(0, 0, 0, 0x5b, 0, 0, 0, 0x5d), 'UTF-32 big-endian text'],
    ['NUL bytes', bytes(0x5b, 0x5d, 0x0a, 0, 0, 0), 'binary data, not text (a NUL byte at offset 3)'],
    [
      'Latin-1',
      bytes(0x5b, 0x22, 0xe9, 0x22, 0x5d),
      'not valid UTF-8 text (byte 0xE9 at offset 2; Latin-1 or Windows-1252?)',
    ],
    ['a truncated sequence', bytes(0x5b, 0x22, 0xe2, 0x82), 'not valid UTF-8 text (byte 0xE2 at offset 2;'],
    [
      'an encoded surrogate',
      bytes(0x22, 0xed, 0xa0, 0x80, 0x22),
      'not valid UTF-8 text (byte 0xED at offset 1;',
    ],
  ])('refuses %s, saying what it is', (_, input, found) => {
    const result = jsonText(input);
    expect(result._tag).toBe('Left');
    expect(result._tag === 'Left' && result.left).toContain(found);
  });
});

describe('invalidUtf8At', () => {
  it.each([
    [bytes(0x41, 0xc3, 0xa9), -1],
    [bytes(0xf0, 0x9f, 0x98, 0x80), -1],
    [bytes(0x41, 0xc0, 0x80), 1], // overlong
    [bytes(0xf4, 0x90, 0x80, 0x80), 0], // above U+10FFFF
    [bytes(0x41, 0x80), 1], // a lone continuation byte
    [bytes(0xe2, 0x28, 0xa1), 0],
  ])('finds the first bad byte of %j at %d', (input, at) => {
    expect(invalidUtf8At(input)).toBe(at);
  });

  it('agrees with a fatal TextDecoder on random bytes', () => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    let seed = 7;
    for (let round = 0; round < 2000; round++) {
      const input = Uint8Array.from({ length: 1 + (round % 12) }, () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % 3 === 0 ? seed % 128 : 0x80 + (seed % 128);
      });
      let valid = true;
      try {
        decoder.decode(input);
      } catch {
        valid = false;
      }
      expect(invalidUtf8At(input) === -1).toBe(valid);
    }
  });
});
