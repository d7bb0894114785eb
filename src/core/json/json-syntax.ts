/** jsonSyntaxError: where and why a text is not JSON, in words that never quote more than one character of it. */

/** The first place `text` stops being JSON (1-based line and column) and what is wrong there. */
export interface JsonSyntaxError {
  readonly line: number;
  readonly column: number;
  readonly problem: string;
}

const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHexDigit = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const charNames: Readonly<Record<number, string>> = { 0: 'a NUL character', 0xfeff: 'a byte-order mark' };

/** One character, shown so that a secret around it cannot leak: the character itself, or its code point. */
export const describeChar = (c: number): string => {
  const code = `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
  if (charNames[c] !== undefined) return `${charNames[c]} (${code})`;
  if (c > 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  if (c >= 0xa0 && (c < 0xd800 || c > 0xdfff)) return `'${String.fromCharCode(c)}' (${code})`;
  return code;
};

const lineAndColumn = (text: string, at: number): { line: number; column: number } => {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < at; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: at - lineStart + 1 };
};

/** Where the text stops being JSON (an offset) and why. */
class Stop {
  constructor(
    readonly at: number,
    readonly problem: string,
  ) {}
}

const simpleEscapes = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const cutShort = 'this string never ends (the file may be cut short)';

const stringEnd = (text: string, open: number): number | Stop => {
  for (let i = open + 1; i < text.length;) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20)
      return new Stop(i, `${describeChar(c)} inside a string; JSON needs it escaped (\\n, \\u0000)`);
    if (c !== 0x5c) {
      i++;
      continue;
    }
    const escaped = text.charCodeAt(i + 1);
    if (Number.isNaN(escaped)) break;
    if (simpleEscapes.has(escaped)) i += 2;
    else if (escaped === 0x75 && [2, 3, 4, 5].every((k) => isHexDigit(text.charCodeAt(i + k)))) i += 6;
    else return new Stop(i, `invalid escape: a backslash followed by ${describeChar(escaped)}`);
  }
  return new Stop(open, cutShort);
};

const digitsEnd = (text: string, from: number): number | Stop => {
  let i = from;
  while (isDigit(text.charCodeAt(i))) i++;
  if (i > from) return i;
  return new Stop(from, from < text.length ? 'a number needs a digit here' : 'the file ends inside a number');
};

const numberEnd = (text: string, start: number): number | Stop => {
  let i: number | Stop = text.charCodeAt(start) === 0x2d ? start + 1 : start;
  i = text.charCodeAt(i) === 0x30 ? i + 1 : digitsEnd(text, i);
  if (typeof i === 'number' && text.charCodeAt(i) === 0x2e) i = digitsEnd(text, i + 1);
  if (typeof i === 'number' && (text.charCodeAt(i) | 0x20) === 0x65) {
    const sign = text.charCodeAt(i + 1);
    i = digitsEnd(text, sign === 0x2b || sign === 0x2d ? i + 2 : i + 1);
  }
  return i;
};

type Expecting = 'value' | 'value or ]' | 'key' | 'key or }' | ':' | ', or close' | 'end';

const expectedWords: Readonly<Record<Expecting, string>> = {
  value: 'a value',
  'value or ]': "a value or ']'",
  key: 'a key in double quotes',
  'key or }': "a key in double quotes or '}'",
  ':': "':' after the key",
  ', or close': '',
  end: 'nothing more after the JSON value',
};

/** The end of the value starting at `i` when it is a string, number or literal; undefined when none starts there. */
const scalarEnd = (text: string, i: number): number | Stop | undefined => {
  const c = text.charCodeAt(i);
  if (c === 0x22) return stringEnd(text, i);
  if (c === 0x2d || isDigit(c)) return numberEnd(text, i);
  for (const literal of ['true', 'false', 'null']) if (text.startsWith(literal, i)) return i + literal.length;
  return undefined;
};

const findStop = (text: string): Stop | undefined => {
  const closers: string[] = [];
  let expecting: Expecting = 'value';
  let i = 0;
  const afterValue = (): Expecting => (closers.length === 0 ? 'end' : ', or close');
  for (;;) {
    while (isWhitespace(text.charCodeAt(i))) i++;
    if (i >= text.length) {
      return expecting === 'end'
        ? undefined
        : new Stop(i, 'the file ends before the JSON is complete (it may be cut short)');
    }
    const c = text.charCodeAt(i);
    const closer = closers.at(-1);
    const unexpected = (what: string): Stop => new Stop(i, `unexpected ${describeChar(c)}; expected ${what}`);
    if (expecting === ', or close') {
      if (c === 0x2c) expecting = closer === '}' ? 'key' : 'value';
      else if (String.fromCharCode(c) === closer) {
        closers.pop();
        expecting = afterValue();
      } else return unexpected(`',' or '${closer}'`);
      i++;
    } else if (expecting === ':') {
      if (c !== 0x3a) return unexpected(expectedWords[':']);
      expecting = 'value';
      i++;
    } else if (expecting === 'key' || expecting === 'key or }') {
      if (c === 0x7d && expecting === 'key or }') {
        closers.pop();
        expecting = afterValue();
        i++;
      } else if (c === 0x22) {
        const end = stringEnd(text, i);
        if (end instanceof Stop) return end;
        i = end;
        expecting = ':';
      } else if (c === 0x7d) return new Stop(i, "unexpected '}' after ','; JSON allows no trailing comma");
      else return unexpected(expectedWords[expecting]);
    } else if (expecting === 'end') {
      return unexpected(expectedWords.end);
    } else if (c === 0x5d && expecting === 'value or ]') {
      closers.pop();
      expecting = afterValue();
      i++;
    } else if (c === 0x7b || c === 0x5b) {
      closers.push(c === 0x7b ? '}' : ']');
      expecting = c === 0x7b ? 'key or }' : 'value or ]';
      i++;
    } else {
      const end = scalarEnd(text, i);
      if (end instanceof Stop) return end;
      if (end === undefined) {
        return c === 0x5d && closer === ']'
          ? new Stop(i, "unexpected ']' after ','; JSON allows no trailing comma")
          : unexpected(expectedWords[expecting]);
      }
      i = end;
      expecting = afterValue();
    }
  }
};

/**
 * Where `text` stops being JSON (RFC 8259, as JSON.parse reads it), or undefined when it is JSON. Iterative:
 * any depth of nesting is fine. JSON.parse's own message quotes the text around the error, which may hold a
 * credential; this one names the line, the column and at most one character.
 */
export const jsonSyntaxError = (text: string): JsonSyntaxError | undefined => {
  const stop = findStop(text);
  return stop === undefined ? undefined : { ...lineAndColumn(text, stop.at), problem: stop.problem };
};
