/** ChunkedDecoder: chunked bodies decoded however their bytes are split, bounded, and refused when malformed. */
import fc from 'fast-check';
import { ChunkedDecoder } from '../../../src/net/direct/chunked-decoder';
import { MalformedResponse } from '../../../src/net/direct/response-head';

const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');

/** `chunks` chunk-encoded, with `trailers` (lines without their CRLF) after the last chunk. */
const encode = (chunks: ReadonlyArray<Uint8Array>, trailers: ReadonlyArray<string> = []): Buffer =>
  Buffer.concat([
    ...chunks
      .filter((chunk) => chunk.byteLength > 0)
      .flatMap((chunk) => [latin1(`${chunk.byteLength.toString(16)}\r\n`), chunk, latin1('\r\n')]),
    latin1(`0\r\n${trailers.map((line) => `${line}\r\n`).join('')}\r\n`),
  ]);

interface Decoded {
  readonly data: Buffer;
  /** Bytes used of each push. */
  readonly used: ReadonlyArray<number>;
  readonly done: boolean;
}

/** Pushes `pieces` in turn into one decoder, copying what it hands on (its views are valid only during the call). */
const decode = (pieces: ReadonlyArray<Uint8Array>, decoder = new ChunkedDecoder()): Decoded => {
  const data: Buffer[] = [];
  const used = pieces.map((piece) => decoder.push(piece, (bytes) => data.push(Buffer.from(bytes))));
  return { data: Buffer.concat(data), used, done: decoder.done };
};

/** `bytes` cut at `cuts` (offsets, any order, duplicates allowed). */
const split = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Uint8Array[] => {
  const at = [...new Set([0, ...cuts.map((cut) => Math.min(cut, bytes.byteLength)), bytes.byteLength])].sort(
    (a, b) => a - b,
  );
  return at.slice(1).map((end, i) => bytes.subarray(at[i], end));
};

/** Trailer lines of `bytes` in all, each counted with its CRLF: fifteen of 1026 bytes, and one line for the rest. */
const trailerLinesOf = (bytes: number): string[] => [
  ...Array.from({ length: 15 }, () => `X: ${'t'.repeat(1021)}`),
  `Y: ${'t'.repeat(bytes - 15 * 1026 - 5)}`,
];

const bytewise = (bytes: Uint8Array): Uint8Array[] => Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));

const refusal = (pieces: ReadonlyArray<Uint8Array>): unknown => {
  try {
    decode(pieces);
  } catch (cause) {
    return cause;
  }
  return undefined;
};

const body = encode([latin1('hello'), latin1(' chunked'), Buffer.alloc(300, 0x61), latin1('\r\n\x00end')]);
const expected = Buffer.concat([latin1('hello chunked'), Buffer.alloc(300, 0x61), latin1('\r\n\x00end')]);

describe('ChunkedDecoder', () => {
  describe('decoding', () => {
    it('hands on the data and ends when a body is pushed whole', () => {
      const decoded = decode([body]);
      expect(decoded.data).toEqual(expected);
      expect(decoded.used).toEqual([body.byteLength]);
      expect(decoded.done).toBe(true);
    });

    it('gives the same data when a body is pushed one byte at a time', () => {
      const decoded = decode(bytewise(body));
      expect(decoded.data).toEqual(expected);
      expect(decoded.used.every((used) => used === 1)).toBe(true);
      expect(decoded.done).toBe(true);
    });

    it('gives the same data when a body is cut in two at any byte', () => {
      for (let cut = 0; cut <= body.byteLength; cut++) {
        const decoded = decode(split(body, [cut]));
        expect(decoded.data).toEqual(expected);
        expect(decoded.done).toBe(true);
      }
    });

    it('is not done until the empty line after the last chunk when the end comes byte by byte', () => {
      const decoder = new ChunkedDecoder();
      const bytes = encode([latin1('abc')], ['X-T: 1']);
      bytes.subarray(0, -1).forEach((_, i) => {
        decoder.push(bytes.subarray(i, i + 1), () => undefined);
        expect(decoder.done).toBe(false);
      });
      decoder.push(bytes.subarray(-1), () => undefined);
      expect(decoder.done).toBe(true);
    });

    it('hands on views of the pushed bytes when data comes', () => {
      const bytes = encode([latin1('abc')]);
      const views: Uint8Array[] = [];
      new ChunkedDecoder().push(bytes, (data) => views.push(data));
      expect(views).toHaveLength(1);
      expect(views[0]!.buffer).toBe(bytes.buffer);
    });

    it('never hands on an empty run when data comes a byte at a time', () => {
      const runs: number[] = [];
      const decoder = new ChunkedDecoder();
      for (const piece of bytewise(body)) decoder.push(piece, (data) => runs.push(data.byteLength));
      expect(runs.every((run) => run > 0)).toBe(true);
    });

    it('decodes an empty body when the first chunk is the last', () => {
      const decoded = decode([latin1('0\r\n\r\n')]);
      expect(decoded.data.byteLength).toBe(0);
      expect(decoded.done).toBe(true);
    });

    it.each([
      ['upper-case hex', 'A'],
      ['lower-case hex', 'a'],
      ['leading zeros', '000a'],
      ['13 hex digits', '000000000000a'],
    ])('reads a size written in %s', (_what, size) => {
      const decoded = decode([latin1(`${size}\r\n0123456789\r\n0\r\n\r\n`)]);
      expect(decoded.data.toString('latin1')).toBe('0123456789');
      expect(decoded.done).toBe(true);
    });

    it.each([
      ['a bare extension', '5;ext'],
      ['an extension with a value', '5;name=value'],
      ['a quoted value', '5;name="a; b=c"'],
      ['several extensions', '5;a=1;b;c="x"'],
      ['spaces before the semicolon', '5  ;a=1'],
      ['a tab before the semicolon', '5\t;a'],
      ['spaces after the semicolon', '5; a = 1'],
    ])('skips %s after a chunk size', (_what, line) => {
      const bytes = latin1(`${line}\r\nhello\r\n0;last=1\r\n\r\n`);
      for (const pieces of [[bytes], bytewise(bytes)]) {
        const decoded = decode(pieces);
        expect(decoded.data.toString('latin1')).toBe('hello');
        expect(decoded.done).toBe(true);
      }
    });

    it('drops trailers and hands on only the data when trailers follow the last chunk', () => {
      const bytes = encode([latin1('data')], ['X-Checksum: abc', 'X-Other: 1', 'Not even a field']);
      for (const pieces of [[bytes], bytewise(bytes)]) {
        const decoded = decode(pieces);
        expect(decoded.data.toString('latin1')).toBe('data');
        expect(decoded.done).toBe(true);
      }
    });

    it('accepts trailers of just under 16 KiB when a server sends that many', () => {
      const trailers = Array.from({ length: 15 }, (_, i) => `X-${i}: ${'t'.repeat(1000)}`);
      const bytes = encode([latin1('x')], trailers);
      expect(decode([bytes]).done).toBe(true);
      expect(decode(split(bytes, [7000, 12000])).done).toBe(true);
    });

    it('accepts trailers of exactly 16 KiB however they are split', () => {
      const trailers = trailerLinesOf(16 * 1024);
      const bytes = encode([latin1('x')], trailers);
      expect(trailers.reduce((sum, line) => sum + line.length + 2, 0)).toBe(16 * 1024);
      for (let cut = 0; cut <= bytes.byteLength; cut += 13)
        expect(decode(split(bytes, [cut])).done).toBe(true);
    });

    it('accepts a chunk-size line of exactly 1024 bytes however it is split', () => {
      const line = `5;${'e'.repeat(1022)}`;
      expect(line).toHaveLength(1024);
      const bytes = latin1(`${line}\r\nhello\r\n0\r\n\r\n`);
      for (let cut = 0; cut <= bytes.byteLength; cut++) {
        const decoded = decode(split(bytes, [cut]));
        expect(decoded.data.toString('latin1')).toBe('hello');
        expect(decoded.done).toBe(true);
      }
    });
  });

  describe('after the end', () => {
    const bytes = encode([latin1('abc')]);
    const next = latin1('HTTP/1.1 200 OK\r\n');

    it('uses only the body bytes when the same push carries bytes past its end', () => {
      const data: string[] = [];
      const decoder = new ChunkedDecoder();
      const used = decoder.push(Buffer.concat([bytes, next]), (run) =>
        data.push(Buffer.from(run).toString()),
      );
      expect(used).toBe(bytes.byteLength);
      expect(data.join('')).toBe('abc');
      expect(decoder.done).toBe(true);
    });

    it('uses nothing and hands on nothing when pushed bytes after it is done', () => {
      const decoder = new ChunkedDecoder();
      decoder.push(bytes, () => undefined);
      const onData = jest.fn();
      expect(decoder.push(next, onData)).toBe(0);
      expect(onData).not.toHaveBeenCalled();
      expect(decoder.done).toBe(true);
    });

    it('uses all the bytes of a push that ends before the body does', () => {
      const decoder = new ChunkedDecoder();
      expect(decoder.push(bytes.subarray(0, 6), () => undefined)).toBe(6);
      expect(decoder.done).toBe(false);
    });

    it('uses nothing of an empty push when given one', () => {
      expect(new ChunkedDecoder().push(new Uint8Array(0), () => undefined)).toBe(0);
    });
  });

  describe('refusals', () => {
    it.each([
      ['a size that is not hex', 'g\r\n'],
      ['an empty size line', '\r\n'],
      ['a negative size', '-5\r\n'],
      ['a 0x prefix', '0x5\r\n'],
      ['a sign', '+5\r\n'],
      ['space before the size', ' 5\r\n'],
      ['space after the size with no extension', '5 \r\n'],
      ['14 hex digits', '0000000000000a\r\n'],
      ['a size line ended by a bare LF', '5\nhello\r\n0\r\n\r\n'],
      ['a bare CR inside a size line', '5\r;x\r\n'],
      ['data not followed by CRLF', '5\r\nhelloX\r\n0\r\n\r\n'],
      ['data followed by a bare LF', '5\r\nhello\n0\r\n\r\n'],
      ['data followed by CR and not LF', '5\r\nhello\r0\r\n\r\n'],
      ['data longer than its size', '3\r\nhello\r\n0\r\n\r\n'],
      ['a trailer line ended by a bare LF', '0\r\nX-T: 1\n\r\n'],
      ['a last line ended by a bare LF', '0\r\n\n'],
    ])('throws MalformedResponse for %s', (_what, text) => {
      const bytes = latin1(text);
      expect(refusal([bytes])).toBeInstanceOf(MalformedResponse);
      expect(refusal(bytewise(bytes))).toBeInstanceOf(MalformedResponse);
    });

    it('throws MalformedResponse when a size line passes 1 KiB without its end', () => {
      const decoder = new ChunkedDecoder();
      expect(decoder.push(latin1(`5;${'e'.repeat(1000)}`), () => undefined)).toBe(1002);
      expect(() => decoder.push(latin1('e'.repeat(100)), () => undefined)).toThrow(MalformedResponse);
    });

    it('throws MalformedResponse when a whole size line is longer than 1 KiB', () => {
      const bytes = latin1(`5;${'e'.repeat(1023)}\r\nhello\r\n0\r\n\r\n`);
      for (let cut = 0; cut <= bytes.byteLength; cut += 97) {
        expect(refusal(split(bytes, [cut]))).toBeInstanceOf(MalformedResponse);
      }
    });

    it('throws MalformedResponse when a trickled size line never ends', () => {
      const decoder = new ChunkedDecoder();
      const trickle = (): void => {
        for (let i = 0; i < 2000; i++) decoder.push(latin1('0'), () => undefined);
      };
      expect(trickle).toThrow(MalformedResponse);
    });

    it('throws MalformedResponse when trailers are one byte over 16 KiB', () => {
      const trailers = trailerLinesOf(16 * 1024 + 1);
      const bytes = encode([latin1('x')], trailers);
      expect(refusal([bytes])).toBeInstanceOf(MalformedResponse);
      expect(refusal(bytewise(bytes))).toBeInstanceOf(MalformedResponse);
    });

    it('throws MalformedResponse when trailers pass 16 KiB', () => {
      const trailers = Array.from({ length: 17 }, (_, i) => `X-${i}: ${'t'.repeat(1000)}`);
      const bytes = encode([latin1('x')], trailers);
      expect(refusal([bytes])).toBeInstanceOf(MalformedResponse);
      expect(refusal(split(bytes, [5000, 9000, 15000]))).toBeInstanceOf(MalformedResponse);
    });

    it('throws MalformedResponse when one trailer line passes 16 KiB without its end', () => {
      const decoder = new ChunkedDecoder();
      decoder.push(latin1('0\r\nX-T: '), () => undefined);
      expect(() => decoder.push(latin1('t'.repeat(17 * 1024)), () => undefined)).toThrow(MalformedResponse);
    });

    it('throws MalformedResponse when endless empty-valued trailers come', () => {
      const decoder = new ChunkedDecoder();
      decoder.push(latin1('0\r\n'), () => undefined);
      const trickle = (): void => {
        for (let i = 0; i < 10_000; i++) decoder.push(latin1('X:\r\n'), () => undefined);
      };
      expect(trickle).toThrow(MalformedResponse);
    });

    it('hands on the data before the fault when a chunk is not ended by CRLF', () => {
      const data: string[] = [];
      expect(() =>
        new ChunkedDecoder().push(latin1('5\r\nhelloXX'), (run) => data.push(Buffer.from(run).toString())),
      ).toThrow(MalformedResponse);
      expect(data.join('')).toBe('hello');
    });
  });

  describe('(fuzz)', () => {
    const chunks = fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 12 });
    const trailers = fc.array(fc.stringMatching(/^[A-Za-z-]{1,10}: [ -~]{0,40}$/), { maxLength: 4 });

    it('decodes what was encoded when the bytes are split at random places', () => {
      fc.assert(
        fc.property(chunks, trailers, fc.array(fc.nat(4000), { maxLength: 30 }), (input, fields, cuts) => {
          const bytes = encode(input, fields);
          const extra = latin1('HTTP/1.1 200 OK\r\n');
          const decoded = decode(split(Buffer.concat([bytes, extra]), cuts));
          expect(decoded.data).toEqual(Buffer.concat(input));
          expect(decoded.done).toBe(true);
          expect(decoded.used.reduce((sum, used) => sum + used, 0)).toBe(bytes.byteLength);
        }),
        { numRuns: 1000 },
      );
    });

    it('throws nothing but MalformedResponse when given any bytes', () => {
      fc.assert(
        fc.property(
          fc.uint8Array({ maxLength: 400 }),
          fc.array(fc.nat(400), { maxLength: 10 }),
          (bytes, cuts) => {
            try {
              decode(split(bytes, cuts));
            } catch (cause) {
              expect(cause).toBeInstanceOf(MalformedResponse);
            }
          },
        ),
        { numRuns: 2000 },
      );
    });
  });
});
