/** pbtxtName: the top-level `name` of a protobuf text-format message (Triton's config.pbtxt), read without a schema. */

// Our own scanner, not a library: protobuf-es reads the text format only against the message's schema (Triton's
// whole ModelConfig, which grows with every release: a field it does not know fails the parse), and one top-level
// string is all that is needed here. It follows the text-format spec (protobuf.dev/reference/protobuf/
// textformat-spec): `#` comments, single or double quotes, C escapes, adjacent strings concatenated, nested
// messages in `{}` or `<>`, lists in `[]`, optional `,` or `;` between fields.

type Token =
  | { readonly kind: 'open' | 'close' | 'colon' | 'separator' }
  | { readonly kind: 'word' | 'string'; readonly text: string };

const punctuation: Readonly<Record<string, Token>> = {
  '{': { kind: 'open' },
  '<': { kind: 'open' },
  '[': { kind: 'open' },
  '}': { kind: 'close' },
  '>': { kind: 'close' },
  ']': { kind: 'close' },
  ':': { kind: 'colon' },
  ',': { kind: 'separator' },
  ';': { kind: 'separator' },
};

const isSpace = (c: string): boolean => ' \t\n\r\v\f'.includes(c);
const ends = (c: string): boolean => isSpace(c) || c in punctuation || c === '#' || c === '"' || c === "'";

// C's one-character escapes (`\\n`, ...) and the characters they stand for, position by position.
const simpleEscapes = 'abfnrtv\\\'"?';
const escapedChars = '\x07\b\f\n\r\t\v\\\'"?';
const utf8 = new TextEncoder();

/** The string literal opening at `start` (its quote): its value and where it ends; throws when it is malformed. */
const stringAt = (text: string, start: number): { readonly value: string; readonly end: number } => {
  const quote = text[start]!;
  const bytes: number[] = [];
  let i = start + 1;
  const digits = (pattern: RegExp, max: number): string => {
    let taken = '';
    while (taken.length < max && i < text.length && pattern.test(text[i]!)) taken += text[i++];
    return taken;
  };
  for (;;) {
    const c = text[i];
    if (c === undefined || c === '\n') throw new Error('unterminated string');
    if (c === quote) return { value: new TextDecoder().decode(new Uint8Array(bytes)), end: i + 1 };
    if (c !== '\\') {
      const point = text.codePointAt(i)!;
      bytes.push(...utf8.encode(String.fromCodePoint(point)));
      i += point > 0xffff ? 2 : 1;
      continue;
    }
    const e = text[++i];
    i++;
    if (e !== undefined && simpleEscapes.includes(e))
      bytes.push(escapedChars.charCodeAt(simpleEscapes.indexOf(e)));
    else if (e !== undefined && /[0-7]/.test(e)) {
      i--;
      bytes.push(parseInt(digits(/[0-7]/, 3), 8) & 0xff);
    } else if (e === 'x' || e === 'X') {
      const hex = digits(/[0-9a-fA-F]/, 2);
      if (hex === '') throw new Error('\\x without hex digits');
      bytes.push(parseInt(hex, 16));
    } else if (e === 'u' || e === 'U') {
      const hex = digits(/[0-9a-fA-F]/, e === 'u' ? 4 : 8);
      const point = parseInt(hex, 16);
      if (hex.length !== (e === 'u' ? 4 : 8) || point > 0x10ffff) throw new Error(`bad \\${e} escape`);
      bytes.push(...utf8.encode(String.fromCodePoint(point)));
    } else throw new Error(`unknown escape \\${e ?? ''}`);
  }
};

/** The tokens of `text`, comments and blanks left out; throws at a malformed string. */
function* tokens(text: string): Generator<Token> {
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (isSpace(c)) i++;
    else if (c === '#') {
      const newline = text.indexOf('\n', i);
      i = newline < 0 ? text.length : newline + 1;
    } else if (c in punctuation) {
      yield punctuation[c]!;
      i++;
    } else if (c === '"' || c === "'") {
      const { value, end } = stringAt(text, i);
      yield { kind: 'string', text: value };
      i = end;
    } else {
      const start = i;
      while (i < text.length && !ends(text[i]!)) i++;
      yield { kind: 'word', text: text.slice(start, i) };
    }
  }
}

/**
 * The value of the one top-level `name: "…"` field of a text-format message, or undefined when there is none, or
 * when the text does not scan cleanly (a malformed string, unbalanced brackets, `name` given twice or not as a
 * string): the server then refuses the file for its own reasons, and says so itself. Fields of nested messages
 * (`input [ { name: "INPUT0" … } ]`) are not the model's name.
 */
export const pbtxtName = (text: string): string | undefined => {
  try {
    let depth = 0;
    const names: string[] = [];
    // Where a top-level `name: "…"` stands: after `name`, after its colon, in its (maybe concatenated) string.
    let state: 'field' | 'afterName' | 'afterColon' | 'inValue' = 'field';
    let value = '';
    for (const token of tokens(text)) {
      if (state === 'inValue') {
        if (token.kind === 'string') {
          value += token.text;
          continue;
        }
        names.push(value);
        state = 'field';
      }
      if (state === 'afterName' || state === 'afterColon') {
        // `name` not as `name: "…"` (a message, a number, a word): not a config Triton reads.
        if (token.kind !== (state === 'afterName' ? 'colon' : 'string')) return undefined;
        if (token.kind === 'string') value = token.text;
        state = state === 'afterName' ? 'afterColon' : 'inValue';
        continue;
      }
      if (token.kind === 'open') depth++;
      else if (token.kind === 'close' && --depth < 0) return undefined;
      else if (depth === 0 && token.kind === 'word' && token.text === 'name') state = 'afterName';
    }
    if (state === 'inValue') names.push(value);
    return depth === 0 && (state === 'field' || state === 'inValue') && names.length === 1
      ? names[0]
      : undefined;
  } catch {
    return undefined;
  }
};
