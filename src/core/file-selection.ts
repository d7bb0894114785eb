/**
 * FileSelection: which files of a model to fetch, as KServe's allow and ignore patterns (its storage initializer's
 * `_should_download`, huggingface_hub's `filter_repo_objects`): shell-style patterns matched against each file's
 * `/`-separated path in the model.
 */
import { partitionPoint } from './partition-point';

/** Patterns a model's files must pass; absent lists select everything. */
export interface FileSelection {
  /** A file is fetched only when it matches one of these (none given: every file). */
  readonly allowPatterns?: ReadonlyArray<string>;
  /** A file that matches one of these is never fetched, even when allowed. */
  readonly ignorePatterns?: ReadonlyArray<string>;
}

/** Most patterns one list may hold, and the longest pattern: a models.json entry stays small to decode and match. */
export const maxPatterns = 256;
export const maxPatternLength = 1024;

/** True when the selection names no pattern: the whole model is fetched (an empty list is none, as in KServe). */
export const selectsAll = (selection: FileSelection | undefined): boolean =>
  !selection?.allowPatterns?.length && !selection?.ignorePatterns?.length;

/**
 * The selection of `allow` and `ignore`, each kept only when it names a pattern; undefined when neither does, so
 * that `[]` and an absent list are the same selection.
 */
export const selectionOf = (
  allow: ReadonlyArray<string> | undefined,
  ignore: ReadonlyArray<string> | undefined,
): FileSelection | undefined => {
  // Decoded and encoded once per model: no object is made for the common spec that selects all.
  if (!allow?.length && !ignore?.length) return undefined;
  return {
    ...(allow?.length ? { allowPatterns: allow } : {}),
    ...(ignore?.length ? { ignorePatterns: ignore } : {}),
  };
};

/** One step of a compiled pattern: each but `star` takes exactly one code point. */
type Token =
  | { readonly _tag: 'Star' }
  | { readonly _tag: 'Any' }
  | { readonly _tag: 'Char'; readonly char: string }
  | {
      readonly _tag: 'Set';
      readonly negated: boolean;
      readonly chars: ReadonlySet<string>;
      readonly ranges: ReadonlyArray<readonly [number, number]>;
    };

const star: Token = { _tag: 'Star' };
const anyChar: Token = { _tag: 'Any' };
const never: Token = { _tag: 'Set', negated: false, chars: new Set(), ranges: [] };

const codeOf = (char: string): number => char.codePointAt(0)!;

/**
 * The set `[...]` whose contents are `pat[from..to)` (the `!` included), as Python's `fnmatch.translate` reads
 * it: hyphens split it into chunks, each hyphen between two chunks a range; an empty range (`z-a`) is dropped with
 * its ends; a `!` first (even one left first by such a drop) negates; a set left empty matches nothing, a negated
 * one left empty any one character.
 */
const setToken = (pat: ReadonlyArray<string>, from: number, to: number): Token => {
  let chunks: string[][];
  const stuff = pat.slice(from, to);
  if (!stuff.includes('-')) chunks = [stuff];
  else {
    chunks = [];
    let start = from;
    // The first character (after a `!`) is never a range's hyphen.
    for (let k = pat[from] === '!' ? from + 2 : from + 1; ; k += 3) {
      k = pat.indexOf('-', k);
      if (k < 0 || k >= to) break;
      chunks.push(pat.slice(start, k));
      start = k + 1;
    }
    const last = pat.slice(start, to);
    if (last.length > 0) chunks.push(last);
    else chunks[chunks.length - 1]!.push('-');
    for (let k = chunks.length - 1; k > 0; k--) {
      const before = chunks[k - 1]!;
      const after = chunks[k]!;
      if (codeOf(before[before.length - 1]!) > codeOf(after[0]!)) {
        chunks[k - 1] = [...before.slice(0, -1), ...after.slice(1)];
        chunks.splice(k, 1);
      }
    }
  }
  if (chunks.length === 1 && chunks[0]!.length === 0) return never;
  const negated = chunks[0]![0] === '!';
  if (negated) chunks[0] = chunks[0]!.slice(1);
  if (negated && chunks[0]!.length === 0) {
    if (chunks.length === 1) return anyChar;
    // `[!-c]` once the `!` is read: the hyphen after it is a plain `-`, as Python's `[^-c]` reads it.
    chunks.splice(0, 2, ['-', ...chunks[1]!]);
  }
  const chars = new Set<string>();
  const ranges: Array<readonly [number, number]> = [];
  chunks.forEach((chunk, m) => {
    const isLast = m === chunks.length - 1;
    chunk.slice(m === 0 ? 0 : 1, isLast ? chunk.length : -1).forEach((char) => chars.add(char));
    if (!isLast) ranges.push([codeOf(chunk[chunk.length - 1]!), codeOf(chunks[m + 1]![0]!)]);
  });
  return { _tag: 'Set', negated, chars, ranges };
};

/**
 * A pattern as Python's `fnmatch.fnmatchcase` reads it (docs/storage.md, "Choosing files"); a `[` without
 * its `]` is a plain `[`; a pattern ending in `/` takes all under that dir (huggingface_hub adds the `*`).
 */
const compile = (pattern: string): ReadonlyArray<Token> => {
  const pat = Array.from(pattern.endsWith('/') ? `${pattern}*` : pattern);
  const tokens: Token[] = [];
  for (let i = 0; i < pat.length;) {
    const char = pat[i++]!;
    if (char === '*') {
      if (tokens[tokens.length - 1] !== star) tokens.push(star);
    } else if (char === '?') tokens.push(anyChar);
    else if (char === '[') {
      let j = i;
      if (pat[j] === '!') j++;
      if (pat[j] === ']') j++;
      while (j < pat.length && pat[j] !== ']') j++;
      if (j >= pat.length) tokens.push({ _tag: 'Char', char });
      else {
        tokens.push(setToken(pat, i, j));
        i = j + 1;
      }
    } else tokens.push({ _tag: 'Char', char });
  }
  return tokens;
};

/**
 * A compiled pattern as a set of states (state `i`: `tokens[0..i)` matched), one bit each, read a code point at a
 * time (a Shift-And automaton with a self-loop at each `*`): length × pattern / 32 word steps at worst, whatever
 * the pattern. A backtracking regular expression takes exponential time on `*a*a*a…`, and even the greedy match
 * that backs up to the last `*` took length × pattern steps: 9 s a file for 256 patterns of `*` and 1,019 `a`s
 * against a 4,000-letter name a hostile store may give.
 */
interface Automaton {
  readonly states: number;
  readonly words: number;
  /** The states at a `*`: kept on any code point, and the next state taken without one. */
  readonly stars: Uint32Array;
  /** The states whose token takes any code point (`?`, and a negated set unless it holds it). */
  readonly anyChar: Uint32Array;
  /** The tokens a code point decides: `Char` ones it is, and the sets it is in. */
  readonly byChar: ReadonlyMap<string, ReadonlyArray<number>>;
  /** The ranges of the sets: `[lo, hi, token]`. */
  readonly ranges: ReadonlyArray<readonly [number, number, number]>;
  /** Where a range begins or ends (`hi + 1`), sorted: between two of them, a code point is in the same ranges. */
  readonly edges: ReadonlyArray<number>;
  readonly tokens: ReadonlyArray<Token>;
}

const setBit = (bits: Uint32Array, i: number): void => {
  bits[i >>> 5]! |= 1 << (i & 31);
};
const clearBit = (bits: Uint32Array, i: number): void => {
  bits[i >>> 5]! &= ~(1 << (i & 31));
};

const automatonOf = (tokens: ReadonlyArray<Token>): Automaton => {
  const words = (tokens.length >>> 5) + 1;
  const [stars, anyChar] = [new Uint32Array(words), new Uint32Array(words)];
  const byChar = new Map<string, number[]>();
  const ranges: Array<readonly [number, number, number]> = [];
  const decides = (char: string, i: number): void => {
    const list = byChar.get(char);
    if (list === undefined) byChar.set(char, [i]);
    else if (list[list.length - 1] !== i) list.push(i);
  };
  tokens.forEach((token, i) => {
    if (token._tag === 'Star') setBit(stars, i);
    else if (token._tag === 'Any') setBit(anyChar, i);
    else if (token._tag === 'Char') decides(token.char, i);
    else {
      if (token.negated) setBit(anyChar, i);
      token.chars.forEach((char) => decides(char, i));
      token.ranges.forEach(([lo, hi]) => ranges.push([lo, hi, i]));
    }
  });
  const edges = [...new Set(ranges.flatMap(([lo, hi]) => [lo, hi + 1]))].sort((a, b) => a - b);
  return { states: tokens.length + 1, words, stars, anyChar, byChar, ranges, edges, tokens };
};

/**
 * The states whose token takes `char`, kept in `known` by the code point if a token names it, else by its stretch
 * between range edges (the same takers for all of it): a name of thousands of distinct code points costs a few.
 */
const takersOf = (
  automaton: Automaton,
  char: string,
  known: Map<string | number, Uint32Array>,
): Uint32Array => {
  const code = codeOf(char);
  const named = automaton.byChar.get(char);
  // Its stretch: how many of the edges are at or below it.
  const key = named === undefined ? partitionPoint(automaton.edges, (edge) => edge <= code) : char;
  const kept = known.get(key);
  if (kept !== undefined) return kept;
  const takers = automaton.anyChar.slice();
  const ranged = automaton.ranges.filter(([lo, hi]) => lo <= code && code <= hi).map(([, , i]) => i);
  for (const i of new Set([...(named ?? []), ...ranged])) {
    const token = automaton.tokens[i]!;
    if (token._tag === 'Set' && token.negated) clearBit(takers, i);
    else setBit(takers, i);
  }
  known.set(key, takers);
  return takers;
};

/** `bits` with each state at a `*` also moved one state on (the `*` taking nothing); no two stars are adjacent. */
const passStars = (bits: Uint32Array, stars: Uint32Array): void => {
  let carry = 0;
  for (let w = 0; w < bits.length; w++) {
    const starred = bits[w]! & stars[w]!;
    bits[w]! |= (starred << 1) | carry;
    carry = starred >>> 31;
  }
};

/** Whether `automaton` matches all of `text` (code points). */
const matches = (automaton: Automaton, text: ReadonlyArray<string>): boolean => {
  const { words, stars } = automaton;
  let now = new Uint32Array(words);
  let next = new Uint32Array(words);
  now[0] = 1;
  passStars(now, stars);
  // The takers of each code point, for this text only.
  const known = new Map<string | number, Uint32Array>();
  for (const char of text) {
    const takers = takersOf(automaton, char, known);
    let carry = 0;
    let alive = 0;
    for (let w = 0; w < words; w++) {
      const moved = now[w]! & takers[w]!;
      next[w] = (moved << 1) | carry | (now[w]! & stars[w]!);
      carry = moved >>> 31;
      alive |= next[w]!;
    }
    if (alive === 0) return false;
    passStars(next, stars);
    [now, next] = [next, now];
  }
  const last = automaton.states - 1;
  return (now[last >>> 5]! & (1 << (last & 31))) !== 0;
};

/** A test of `/`-separated paths against `selection`, its patterns compiled once (no selection: every path). */
export const fileFilter = (selection: FileSelection | undefined): ((path: string) => boolean) => {
  if (selectsAll(selection)) return () => true;
  const allow = (selection?.allowPatterns ?? []).map((pattern) => automatonOf(compile(pattern)));
  const ignore = (selection?.ignorePatterns ?? []).map((pattern) => automatonOf(compile(pattern)));
  return (path) => {
    const text = Array.from(path);
    return (
      (allow.length === 0 || allow.some((tokens) => matches(tokens, text))) &&
      !ignore.some((tokens) => matches(tokens, text))
    );
  };
};

/** The selection as one stable line (for a content identity and messages): `allow=[…] ignore=[…]`. */
export const selectionKey = (selection: FileSelection | undefined): string =>
  selectsAll(selection)
    ? ''
    : `allow=${JSON.stringify(selection?.allowPatterns ?? [])} ignore=${JSON.stringify(selection?.ignorePatterns ?? [])}`;

/** Why a selection chose nothing, for a permanent `not-found`: `the patterns allow=[…] ignore=[…] select none of its 3 objects`. */
export const selectedNone = (selection: FileSelection | undefined, count: number, noun: string): string =>
  `the patterns ${selectionKey(selection)} select none of its ${count} ${noun}`;

/** Why `patterns` cannot be a pattern list (too many, one empty or too long), or undefined when it can. */
export const patternListProblem = (patterns: ReadonlyArray<string>): string | undefined => {
  if (patterns.length > maxPatterns)
    return `expected at most ${maxPatterns} patterns, got ${patterns.length}`;
  const index = patterns.findIndex((pattern) => pattern.length === 0 || pattern.length > maxPatternLength);
  if (index < 0) return undefined;
  return patterns[index]!.length === 0
    ? `pattern [${index}] is empty`
    : `pattern [${index}] is longer than ${maxPatternLength} characters`;
};
