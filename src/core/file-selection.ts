/**
 * FileSelection: which files of a model to fetch, as KServe's allow and ignore patterns (its storage initializer's
 * `_should_download`, huggingface_hub's `filter_repo_objects`): shell-style patterns matched against each file's
 * `/`-separated path in the model.
 */

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
  (selection?.allowPatterns === undefined || selection.allowPatterns.length === 0) &&
  (selection?.ignorePatterns === undefined || selection.ignorePatterns.length === 0);

/**
 * The selection of `allow` and `ignore`, each kept only when it names a pattern; undefined when neither does, so
 * that `[]` and an absent list are the same selection.
 */
export const selectionOf = (
  allow: ReadonlyArray<string> | undefined,
  ignore: ReadonlyArray<string> | undefined,
): FileSelection | undefined => {
  // Decoded and encoded once per model: no object is made for the common spec that selects all.
  const keepAllow = allow !== undefined && allow.length > 0;
  const keepIgnore = ignore !== undefined && ignore.length > 0;
  if (!keepAllow && !keepIgnore) return undefined;
  return {
    ...(keepAllow ? { allowPatterns: allow } : {}),
    ...(keepIgnore ? { ignorePatterns: ignore } : {}),
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

const takes = (token: Token, char: string): boolean => {
  switch (token._tag) {
    case 'Any':
      return true;
    case 'Char':
      return token.char === char;
    case 'Set': {
      const code = codeOf(char);
      const inSet = token.chars.has(char) || token.ranges.some(([lo, hi]) => lo <= code && code <= hi);
      return inSet !== token.negated;
    }
    case 'Star':
      return false;
  }
};

/**
 * Whether `tokens` match all of `text`: the greedy wildcard match that backs up to the last `*` only, so that a
 * pattern of many stars costs length × pattern steps at worst (a backtracking regular expression can take
 * exponential time on `*a*a*a…`, and the patterns are the config's).
 */
const matches = (tokens: ReadonlyArray<Token>, text: ReadonlyArray<string>): boolean => {
  let p = 0;
  let t = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (t < text.length) {
    const token = tokens[p];
    if (token === star) {
      starAt = p++;
      resumeAt = t;
    } else if (token !== undefined && takes(token, text[t]!)) {
      p++;
      t++;
    } else if (starAt >= 0) {
      p = starAt + 1;
      t = ++resumeAt;
    } else return false;
  }
  while (tokens[p] === star) p++;
  return p === tokens.length;
};

/** A test of `/`-separated paths against `selection`, its patterns compiled once (no selection: every path). */
export const fileFilter = (selection: FileSelection | undefined): ((path: string) => boolean) => {
  if (selectsAll(selection)) return () => true;
  const allow = (selection?.allowPatterns ?? []).map(compile);
  const ignore = (selection?.ignorePatterns ?? []).map(compile);
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
