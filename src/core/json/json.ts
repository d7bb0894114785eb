/** parseJson and previewJson: JSON in, checked for what JSON.parse lets through; any value out, in bounded text. */
import * as E from 'fp-ts/Either';
import { maxJsonDepth, structureProblems } from './json-structure';
import { jsonSyntaxError } from './json-syntax';

/**
 * Why a text is not usable JSON: it is blank; it is not JSON (`reason` names the line and column and quotes at
 * most one character, so it is safe to log); or JSON.parse would take it but it has duplicate keys or nesting
 * deeper than `maxJsonDepth` (`problems`: one line each, `[3].modelSpec: duplicate key "storageUri"`, at most
 * ten, of `count`).
 */
export type JsonProblem =
  | { readonly _tag: 'Blank' }
  | { readonly _tag: 'Malformed'; readonly reason: string }
  | { readonly _tag: 'Structure'; readonly problems: ReadonlyArray<string>; readonly count: number };

/**
 * What JSON.parse's reviver is given (Node 24: the source text of a number, string, boolean or null), for a reader
 * that needs a number as written.
 */
export type JsonReviver = (key: string, value: unknown, context?: { readonly source?: string }) => unknown;

/** True when `text` is JSON's whitespace only (space, tab, line feed, carriage return: not all that trim takes). */
export const isJsonBlank = (text: string): boolean => /^[ \t\n\r]*$/.test(text);

/**
 * The JSON value of `text`, or why there is none (JSON.parse would keep the last of duplicate keys silently).
 * `reviver` runs only when `text` holds a number JSON.parse cannot give back as written (a reviver makes JSON.parse
 * about six times slower, and a config usually has no number at all).
 */
export const parseJson = (text: string, reviver?: JsonReviver): E.Either<JsonProblem, unknown> => {
  if (isJsonBlank(text)) return E.left({ _tag: 'Blank' });
  const structure = structureProblems(text);
  const refused = E.left({ _tag: 'Structure', problems: structure.lines, count: structure.count } as const);
  // Refused before JSON.parse, whatever follows: parsing a million nested arrays takes seconds and a gigabyte.
  if (structure.tooDeep) return refused;
  try {
    const value: unknown =
      reviver !== undefined && structure.inexactNumbers ? JSON.parse(text, reviver) : JSON.parse(text);
    return structure.count > 0 ? refused : E.right(value);
  } catch {
    const error = jsonSyntaxError(text);
    const reason =
      error === undefined ? 'it is not JSON' : `line ${error.line}, column ${error.column}: ${error.problem}`;
    return E.left({ _tag: 'Malformed', reason });
  }
};

/**
 * A peer's JSON answer, parsed once `structureProblems` found it no deeper than `maxJsonDepth` (JSON.parse spends
 * seconds and 350 MB on 8 MiB of nested arrays); else throws `broken(why)`.
 */
export const parseAnswerJson = (text: string, broken: (why: string) => Error): unknown => {
  if (structureProblems(text, 0).tooDeep) throw broken(`nested deeper than ${maxJsonDepth} levels`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw broken('no JSON');
  }
};

/** The problem in words (the file name is the caller's to add). */
export const describeJsonProblem = (problem: JsonProblem): string => {
  switch (problem._tag) {
    case 'Blank':
      return 'it is empty';
    case 'Malformed':
      return problem.reason;
    case 'Structure':
      return withCountOfMore(problem.problems, problem.count).join('; ');
  }
};

/** `lines`, and `and N more` when they are fewer than `count`. */
export const withCountOfMore = (lines: ReadonlyArray<string>, count: number): ReadonlyArray<string> =>
  count > lines.length ? [...lines, `and ${count - lines.length} more`] : lines;

type PreviewFrame =
  | { readonly items: ReadonlyArray<unknown>; index: number }
  | {
      readonly record: Readonly<Record<string, unknown>>;
      readonly keys: ReadonlyArray<string>;
      index: number;
    };

// Secrets are removed from a long prefix, not from the shown cut: a cut could end inside a URI's user info.
const scannedPrefix = 4096;

const scalarText = (value: unknown, maxChars: number, showString: (text: string) => string): string => {
  if (typeof value === 'string') {
    const shown = showString(value.length > scannedPrefix ? value.slice(0, scannedPrefix) : value);
    return JSON.stringify(shown.length > maxChars ? shown.slice(0, maxChars) : shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return typeof value;
};

/**
 * `value` as JSON text of at most `maxChars` characters (cut with `...`), built without recursion and without
 * visiting more of the value than it shows: a million nested arrays or a 30 MB string cost no more than a small
 * value. JSON.stringify would recurse (a RangeError at ~10,000 levels) and build the whole text first. Each
 * string (key or value) goes through `showString` first (to remove secrets from it).
 */
export const previewJson = (
  value: unknown,
  maxChars = 80,
  showString: (text: string) => string = (text) => text,
): string => {
  let out = '';
  const stack: PreviewFrame[] = [];
  const open = (item: unknown): void => {
    if (Array.isArray(item)) {
      out += '[';
      stack.push({ items: item, index: 0 });
    } else if (typeof item === 'object' && item !== null) {
      out += '{';
      const record = item as Readonly<Record<string, unknown>>;
      stack.push({ record, keys: Object.keys(record), index: 0 });
    } else {
      out += scalarText(item, maxChars, showString);
    }
  };
  open(value);
  while (stack.length > 0 && out.length <= maxChars) {
    const frame = stack.at(-1)!;
    const size = 'items' in frame ? frame.items.length : frame.keys.length;
    if (frame.index >= size) {
      out += 'items' in frame ? ']' : '}';
      stack.pop();
      continue;
    }
    if (frame.index > 0) out += ',';
    if ('items' in frame) {
      open(frame.items[frame.index++]);
    } else {
      const key = frame.keys[frame.index++]!;
      out += `${scalarText(key, maxChars, showString)}:`;
      open(frame.record[key]);
    }
  }
  return out.length > maxChars ? `${out.slice(0, maxChars - 3)}...` : out;
};

/**
 * Whether `text` holds a lone UTF-16 surrogate, which a JSON string may carry (`"\ud800"`): no text a file system or a
 * URL takes (it is written to disk as U+FFFD, so two such names share one; encodeURIComponent throws on it).
 */
export const hasLoneSurrogate = (text: string): boolean => /\p{Cs}/u.test(text);
