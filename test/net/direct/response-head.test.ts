/** parseResponseHead: strict HTTP/1.1 response heads, their framing and reuse, and every refusal. */
import fc from 'fast-check';
import {
  MalformedResponse,
  maxHeadBytes,
  maxHeaderFields,
  parseResponseHead,
  type BodyFraming,
} from '../../../src/net/direct/response-head';
import { relativeCost } from '../../helpers/relative-cost';

/** A head of `lines` (the status line first), each ended by CRLF, then the empty line, then `body`. */
const head = (lines: ReadonlyArray<string>, body = ''): Buffer =>
  Buffer.from(`${lines.map((line) => `${line}\r\n`).join('')}\r\n${body}`, 'latin1');

const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');

const parsed = (bytes: Uint8Array) => {
  const result = parseResponseHead(bytes);
  if (result === undefined) throw new Error('expected a complete head');
  return result;
};

const refusal = (bytes: Uint8Array): unknown => {
  try {
    parseResponseHead(bytes);
  } catch (cause) {
    return cause;
  }
  return undefined;
};

const none: BodyFraming = { _tag: 'none' };
const chunked: BodyFraming = { _tag: 'chunked' };
const untilClose: BodyFraming = { _tag: 'until-close' };
const length = (bytes: number): BodyFraming => ({ _tag: 'length', bytes });

describe('parseResponseHead', () => {
  describe('framing and reuse', () => {
    it.each<[string, ReadonlyArray<string>, BodyFraming, boolean]>([
      ['a Content-Length on HTTP/1.1', ['HTTP/1.1 200 OK', 'Content-Length: 5'], length(5), true],
      [
        'a 206 with a Content-Length',
        ['HTTP/1.1 206 Partial Content', 'Content-Length: 1024'],
        length(1024),
        true,
      ],
      ['a Content-Length of 0', ['HTTP/1.1 200 OK', 'Content-Length: 0'], length(0), true],
      [
        'a 15-digit Content-Length',
        ['HTTP/1.1 200 OK', 'Content-Length: 999999999999999'],
        length(999999999999999),
        true,
      ],
      ['a Content-Length with leading zeros', ['HTTP/1.1 200 OK', 'Content-Length: 007'], length(7), true],
      ['a list of equal Content-Lengths', ['HTTP/1.1 200 OK', 'Content-Length: 5, 5 ,5'], length(5), true],
      [
        'repeated equal Content-Length fields',
        ['HTTP/1.1 200 OK', 'Content-Length: 5', 'content-length: 5'],
        length(5),
        true,
      ],
      ['Transfer-Encoding: chunked', ['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked'], chunked, true],
      [
        'Transfer-Encoding: CHUNKED in capitals',
        ['HTTP/1.1 200 OK', 'Transfer-Encoding: CHUNKED'],
        chunked,
        true,
      ],
      [
        'chunked last of several codings',
        ['HTTP/1.1 200 OK', 'Transfer-Encoding: gzip, chunked'],
        chunked,
        true,
      ],
      [
        'chunked last across two fields',
        ['HTTP/1.1 200 OK', 'Transfer-Encoding: gzip', 'Transfer-Encoding: chunked'],
        chunked,
        true,
      ],
      ['a coding after chunked', ['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked, gzip'], untilClose, false],
      ['a coding other than chunked', ['HTTP/1.1 200 OK', 'Transfer-Encoding: gzip'], untilClose, false],
      ['neither length nor coding', ['HTTP/1.1 200 OK'], untilClose, false],
      [
        'both Transfer-Encoding and Content-Length',
        ['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked', 'Content-Length: 5'],
        chunked,
        false,
      ],
      [
        'both, the length first',
        ['HTTP/1.1 200 OK', 'Content-Length: 5', 'Transfer-Encoding: chunked'],
        chunked,
        false,
      ],
      ['HTTP/1.0 with a Content-Length', ['HTTP/1.0 200 OK', 'Content-Length: 5'], length(5), false],
      [
        'HTTP/1.0 asking for keep-alive',
        ['HTTP/1.0 200 OK', 'Content-Length: 5', 'Connection: keep-alive'],
        length(5),
        false,
      ],
      ['Connection: close', ['HTTP/1.1 200 OK', 'Content-Length: 5', 'Connection: close'], length(5), false],
      [
        'close among Connection tokens',
        ['HTTP/1.1 200 OK', 'Content-Length: 5', 'Connection: keep-alive, Close'],
        length(5),
        false,
      ],
      [
        'close in a second Connection field',
        ['HTTP/1.1 200 OK', 'Content-Length: 5', 'Connection: upgrade', 'Connection: close'],
        length(5),
        false,
      ],
      [
        'Connection: keep-alive',
        ['HTTP/1.1 200 OK', 'Content-Length: 5', 'Connection: keep-alive'],
        length(5),
        true,
      ],
      ['a 204 with a Content-Length', ['HTTP/1.1 204 No Content', 'Content-Length: 10'], none, true],
      [
        'a 304 with a Transfer-Encoding',
        ['HTTP/1.1 304 Not Modified', 'Transfer-Encoding: chunked'],
        none,
        true,
      ],
      ['a 100 Continue', ['HTTP/1.1 100 Continue'], none, true],
      ['a 103 Early Hints', ['HTTP/1.1 103 Early Hints', 'Link: </style.css>; rel=preload'], none, true],
      ['a 101 Switching Protocols', ['HTTP/1.1 101 Switching Protocols', 'Upgrade: websocket'], none, true],
      [
        'a 500 with a Content-Length',
        ['HTTP/1.1 500 Internal Server Error', 'Content-Length: 3'],
        length(3),
        true,
      ],
      ['a 999 status', ['HTTP/1.1 999 Whatever', 'Content-Length: 1'], length(1), true],
    ])('frames and judges reuse of %s', (_what, lines, framing, reusable) => {
      const { head: answer } = parsed(head(lines));
      expect(answer.framing).toEqual(framing);
      expect(answer.reusable).toBe(reusable);
    });

    it('gives the status as a number when the head is complete', () => {
      expect(parsed(head(['HTTP/1.1 206 Partial Content', 'Content-Length: 1'])).head.status).toBe(206);
    });
  });

  describe('fields', () => {
    it('lower-cases field names and trims spaces and tabs around values when reading fields', () => {
      const { head: answer } = parsed(head(['HTTP/1.1 200 OK', 'X-Amz-Request-Id: \t abc \t', 'ETAG:"e"']));
      expect(answer.headers).toEqual({ 'x-amz-request-id': 'abc', etag: '"e"' });
    });

    it('joins the values of a repeated field with ", " when a field comes more than once', () => {
      const { head: answer } = parsed(
        head(['HTTP/1.1 200 OK', 'X-A: 1', 'Content-Length: 0', 'x-a: 2', 'X-A: 3']),
      );
      expect(answer.headers['x-a']).toBe('1, 2, 3');
    });

    it('keeps inner spaces, tabs and obs-text when a value holds them', () => {
      const { head: answer } = parsed(head(['HTTP/1.1 200 OK', 'X-A: a  b\tc \xe9\xff']));
      expect(answer.headers['x-a']).toBe('a  b\tc \xe9\xff');
    });

    it('accepts an empty value when a field has nothing after its colon', () => {
      expect(parsed(head(['HTTP/1.1 200 OK', 'X-Empty:', 'X-Blank:   '])).head.headers).toEqual({
        'x-empty': '',
        'x-blank': '',
      });
    });

    it('accepts every token character in a field name when a name uses them', () => {
      const name = "!#$%&'*+-.^_`|~09azAZ";
      expect(parsed(head(['HTTP/1.1 200 OK', `${name}: v`])).head.headers[name.toLowerCase()]).toBe('v');
    });

    it('accepts a status line with no reason phrase when the reason is left out', () => {
      expect(parsed(head(['HTTP/1.1 200'])).head.status).toBe(200);
      expect(parsed(head(['HTTP/1.1 200 '])).head.status).toBe(200);
    });

    it('accepts a reason phrase with tabs and obs-text when the server sends one', () => {
      expect(parsed(head(['HTTP/1.1 404 Nicht\tgefunden \xfc'])).head.status).toBe(404);
    });

    it('returns where the body starts when body bytes follow the head', () => {
      const bytes = head(['HTTP/1.1 200 OK', 'Content-Length: 5'], 'hello');
      const { bodyStart } = parsed(bytes);
      expect(bytes.subarray(bodyStart).toString('latin1')).toBe('hello');
      expect(bytes.subarray(bodyStart - 4, bodyStart).toString('latin1')).toBe('\r\n\r\n');
    });

    it('reads only the first head when the bytes hold a second one', () => {
      const first = head(['HTTP/1.1 100 Continue']);
      const bytes = Buffer.concat([first, head(['HTTP/1.1 200 OK', 'Content-Length: 0'])]);
      const result = parsed(bytes);
      expect(result.head.status).toBe(100);
      expect(result.bodyStart).toBe(first.byteLength);
    });

    it('parses a view into a larger buffer when given a subarray', () => {
      const bytes = Buffer.concat([
        latin1('junk'),
        head(['HTTP/1.1 200 OK', 'Content-Length: 1'], 'x'),
        latin1('junk'),
      ]);
      const view = new Uint8Array(bytes.buffer, bytes.byteOffset + 4, bytes.byteLength - 8);
      const result = parsed(view);
      expect(result.head.status).toBe(200);
      expect(result.bodyStart).toBe(view.byteLength - 1);
    });

    it(`accepts ${maxHeaderFields} fields when a head has exactly that many`, () => {
      const fields = Array.from({ length: maxHeaderFields }, (_, i) => `X-${i}: ${i}`);
      expect(Object.keys(parsed(head(['HTTP/1.1 200 OK', ...fields])).head.headers)).toHaveLength(
        maxHeaderFields,
      );
    });

    it(`accepts a head of exactly ${maxHeadBytes} bytes when it ends there`, () => {
      const start = 'HTTP/1.1 200 OK\r\nX-Pad: ';
      const pad = 'a'.repeat(maxHeadBytes - start.length - 4);
      const bytes = latin1(`${start}${pad}\r\n\r\n`);
      expect(bytes.byteLength).toBe(maxHeadBytes);
      expect(parsed(bytes).head.headers['x-pad']).toBe(pad);
    });

    it('parses a 60 KiB value of spaces between two letters about as fast as one of letters when a server sends one', () => {
      // A value trimmed by a backtracking regex takes seconds here: a hostile server could stall the event loop.
      const bytes = latin1(
        `HTTP/1.1 200 OK\r\nX-A: a${' '.repeat(60 * 1024)}b\r\nX-B: \t${' \t'.repeat(1024)}c\r\n\r\n`,
      );
      const letters = latin1(
        `HTTP/1.1 200 OK\r\nX-A: a${'x'.repeat(60 * 1024)}b\r\nX-B: \t${'xy'.repeat(1024)}c\r\n\r\n`,
      );
      expect(parsed(bytes).head.headers['x-a']).toBe(`a${' '.repeat(60 * 1024)}b`);
      // Measured against the same head of letters on the same machine: a quadratic trim is thousands of times that.
      expect(
        relativeCost(
          () => parsed(bytes),
          () => parsed(letters),
        ),
      ).toBeLessThan(20);
    });
  });

  describe('incomplete heads', () => {
    const whole = head(['HTTP/1.1 200 OK', 'Content-Length: 5', 'X-A: b']);

    it('returns undefined for every proper prefix of a head when its empty line has not come', () => {
      for (let end = 0; end < whole.byteLength; end++) {
        expect(parseResponseHead(whole.subarray(0, end))).toBeUndefined();
      }
    });

    it('returns undefined when no byte came yet', () => {
      expect(parseResponseHead(new Uint8Array(0))).toBeUndefined();
    });

    it('returns undefined when a head is just under the bound and not ended', () => {
      expect(
        parseResponseHead(latin1(`HTTP/1.1 200 OK\r\nX-A: ${'a'.repeat(maxHeadBytes - 30)}`)),
      ).toBeUndefined();
    });

    it('waits for CRLF CRLF when the head ends with bare LFs', () => {
      expect(parseResponseHead(latin1('HTTP/1.1 200 OK\nContent-Length: 0\n\n'))).toBeUndefined();
    });
  });

  describe('refusals', () => {
    it.each<[string, Buffer]>([
      ['a bare LF inside a field line', latin1('HTTP/1.1 200 OK\r\nX-A: b\nX-C: d\r\n\r\n')],
      ['a bare LF after the status line', latin1('HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n')],
      ['a bare CR in a value', latin1('HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n')],
      ['a bare CR ending a field line', latin1('HTTP/1.1 200 OK\r\nX-A: b\r\r\n\r\n')],
      ['an obs-fold (a line starting with a space)', head(['HTTP/1.1 200 OK', 'X-A: b', ' c'])],
      ['an obs-fold (a line starting with a tab)', head(['HTTP/1.1 200 OK', 'X-A: b', '\tc'])],
      ['a space before the colon', head(['HTTP/1.1 200 OK', 'Content-Length : 5'])],
      ['a tab before the colon', head(['HTTP/1.1 200 OK', 'Content-Length\t: 5'])],
      ['a field line with no colon', head(['HTTP/1.1 200 OK', 'X-A b'])],
      ['a field line with an empty name', head(['HTTP/1.1 200 OK', ': b'])],
      ['a field name with a separator', head(['HTTP/1.1 200 OK', 'X(A): b'])],
      ['a field name with a quote', head(['HTTP/1.1 200 OK', '"X": b'])],
      ['a field name with obs-text', head(['HTTP/1.1 200 OK', 'X-\xe9: b'])],
      ['a NUL in a value', head(['HTTP/1.1 200 OK', 'X-A: b\x00c'])],
      ['a control character in a value', head(['HTTP/1.1 200 OK', 'X-A: b\x01c'])],
      ['a vertical tab in a value', head(['HTTP/1.1 200 OK', 'X-A: b\x0bc'])],
      ['DEL in a value', head(['HTTP/1.1 200 OK', 'X-A: b\x7fc'])],
      ['an escape in a value', head(['HTTP/1.1 200 OK', 'X-A: \x1b[31m'])],
      ['a NUL in the reason phrase', head(['HTTP/1.1 200 O\x00K'])],
      ['HTTP/2 in the status line', head(['HTTP/2 200 OK'])],
      ['HTTP/1.2 in the status line', head(['HTTP/1.2 200 OK'])],
      ['a lower-case protocol', head(['http/1.1 200 OK'])],
      ['a two-digit status', head(['HTTP/1.1 20 OK'])],
      ['a four-digit status', head(['HTTP/1.1 2000 OK'])],
      ['a status starting with 0', head(['HTTP/1.1 099 OK'])],
      ['two spaces before the status', head(['HTTP/1.1  200 OK'])],
      ['a tab before the status', head(['HTTP/1.1\t200 OK'])],
      ['leading spaces before the status line', head([' HTTP/1.1 200 OK'])],
      ['an empty line before the status line', latin1('\r\nHTTP/1.1 200 OK\r\n\r\n')],
      ['garbage instead of a status line', latin1('<html>hello</html>\r\n\r\n')],
      ['a request line instead of a status line', head(['GET / HTTP/1.1', 'Host: x'])],
    ])('throws MalformedResponse for %s', (_what, bytes) => {
      expect(refusal(bytes)).toBeInstanceOf(MalformedResponse);
    });

    it.each([
      ['not a number', 'abc'],
      ['negative', '-1'],
      ['signed', '+5'],
      ['hexadecimal', '0x10'],
      ['in exponent form', '1e3'],
      ['fractional', '5.0'],
      ['16 digits long', '1234567890123456'],
      ['a list of different lengths', '5, 6'],
      ['a list with an empty element', '5, '],
      ['a list led by an empty element', ', 5'],
      ['empty', ''],
      ['a number with inner spaces', '5 5'],
    ])('throws MalformedResponse when a Content-Length is %s', (_what, value) => {
      expect(refusal(head(['HTTP/1.1 200 OK', `Content-Length: ${value}`]))).toBeInstanceOf(
        MalformedResponse,
      );
    });

    it('throws MalformedResponse when two Content-Length fields differ', () => {
      expect(refusal(head(['HTTP/1.1 200 OK', 'Content-Length: 5', 'Content-Length: 6']))).toBeInstanceOf(
        MalformedResponse,
      );
    });

    it('ignores a bad Content-Length when the status has no body', () => {
      expect(parsed(head(['HTTP/1.1 204 No Content', 'Content-Length: abc'])).head.framing).toEqual(none);
    });

    it('ignores a bad Content-Length when a Transfer-Encoding frames the body', () => {
      const { head: answer } = parsed(
        head(['HTTP/1.1 200 OK', 'Transfer-Encoding: chunked', 'Content-Length: x']),
      );
      expect(answer.framing).toEqual(chunked);
      expect(answer.reusable).toBe(false);
    });

    it(`throws MalformedResponse when a head has more than ${maxHeaderFields} fields`, () => {
      const fields = Array.from({ length: maxHeaderFields + 1 }, (_, i) => `X-${i}: ${i}`);
      expect(refusal(head(['HTTP/1.1 200 OK', ...fields]))).toBeInstanceOf(MalformedResponse);
    });

    it(`throws MalformedResponse when a complete head is longer than ${maxHeadBytes} bytes`, () => {
      const start = 'HTTP/1.1 200 OK\r\nX-Pad: ';
      const bytes = latin1(`${start}${'a'.repeat(maxHeadBytes - start.length - 3)}\r\n\r\n`);
      expect(bytes.byteLength).toBe(maxHeadBytes + 1);
      expect(refusal(bytes)).toBeInstanceOf(MalformedResponse);
    });

    it(`throws MalformedResponse when ${maxHeadBytes} bytes came and the head has not ended`, () => {
      const bytes = latin1(`HTTP/1.1 200 OK\r\nX-Pad: ${'a'.repeat(maxHeadBytes)}`).subarray(0, maxHeadBytes);
      expect(refusal(bytes)).toBeInstanceOf(MalformedResponse);
    });

    it('gives the refusal its code and name when it throws', () => {
      const cause = refusal(head(['HTTP/1.1 200 OK', 'X A: b']));
      expect(cause).toMatchObject({ name: 'MalformedResponse', code: 'MODELSYNC_MALFORMED_RESPONSE' });
      expect((cause as Error).message).toMatch(/^malformed HTTP response: /);
    });
  });

  describe('(fuzz)', () => {
    // Pieces of heads, so that random sequences reach the field and framing rules, not only the status line.
    const piece = fc.constantFrom(
      'HTTP/1.1 200 OK\r\n',
      'HTTP/1.0 206 Partial\r\n',
      'HTTP/1.1 100 Continue\r\n',
      'HTTP/1.1 204\r\n',
      '\r\n',
      '\n',
      '\r',
      ':',
      ': ',
      ' ',
      '\t',
      ',',
      'Content-Length',
      'Transfer-Encoding',
      'Connection',
      'close',
      'chunked',
      'gzip',
      '5',
      '0',
      '18446744073709551616',
      '-',
      '\x00',
      '\x7f',
      '\xff',
      'X-A',
      '__proto__',
      'constructor',
      'toString',
    );
    const structured = fc
      .tuple(fc.constantFrom('HTTP/1.1 200 OK\r\n', ''), fc.array(piece, { maxLength: 80 }), fc.boolean())
      .map(([start, pieces, end]) => latin1(`${start}${pieces.join('')}${end ? '\r\n\r\n' : ''}`));
    const bytes = fc.oneof(fc.uint8Array({ maxLength: 512 }), structured);

    it('throws nothing but MalformedResponse, and returns, when given any bytes', () => {
      fc.assert(
        fc.property(bytes, (input) => {
          let result: ReturnType<typeof parseResponseHead>;
          try {
            result = parseResponseHead(input);
          } catch (cause) {
            expect(cause).toBeInstanceOf(MalformedResponse);
            return;
          }
          if (result === undefined) {
            expect(Buffer.from(input).indexOf('\r\n\r\n', 0, 'latin1')).toBe(-1);
            return;
          }
          expect(result.bodyStart).toBeLessThanOrEqual(input.byteLength);
          expect(Buffer.from(input.subarray(result.bodyStart - 4, result.bodyStart)).toString('latin1')).toBe(
            '\r\n\r\n',
          );
          expect(result.head.status).toBeGreaterThanOrEqual(100);
          expect(result.head.status).toBeLessThanOrEqual(999);
          for (const value of Object.values(result.head.headers)) {
            for (const forbidden of ['\r', '\n', '\0']) expect(String(value)).not.toContain(forbidden);
          }
          if (result.head.framing._tag === 'length')
            expect(Number.isSafeInteger(result.head.framing.bytes)).toBe(true);
        }),
        { numRuns: 3000 },
      );
    });

    it('throws nothing but MalformedResponse when a valid head is cut or has one byte changed', () => {
      const valid = head([
        'HTTP/1.1 206 Partial Content',
        'Content-Length: 10',
        'Connection: keep-alive',
        'ETag: "x"',
      ]);
      fc.assert(
        fc.property(
          fc.nat(valid.byteLength - 1),
          fc.integer({ min: 0, max: 255 }),
          fc.boolean(),
          (at, byte, cut) => {
            const input = Buffer.from(valid);
            input[at] = byte;
            try {
              parseResponseHead(cut ? input.subarray(0, at) : input);
            } catch (cause) {
              expect(cause).toBeInstanceOf(MalformedResponse);
            }
          },
        ),
        { numRuns: 3000 },
      );
    });
  });
});
