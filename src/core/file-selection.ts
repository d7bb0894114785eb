/**
 * FileSelection: which files of a model to fetch, as KServe's allow and ignore patterns (huggingface_hub's
 * `filter_repo_objects`): shell-style patterns matched against each file's `/`-separated path in the model.
 */

/** Patterns a model's files must pass; absent lists select everything. */
export interface FileSelection {
  /** A file is fetched only when it matches one of these (none given: every file). */
  readonly allowPatterns?: ReadonlyArray<string>;
  /** A file that matches one of these is never fetched, even when allowed. */
  readonly ignorePatterns?: ReadonlyArray<string>;
}

/** True when the selection names no pattern: the whole model is fetched. */
export const selectsAll = (selection: FileSelection | undefined): boolean =>
  (selection?.allowPatterns === undefined || selection.allowPatterns.length === 0) &&
  (selection?.ignorePatterns === undefined || selection.ignorePatterns.length === 0);

const special = /[\\^$.+(){}|]/g;

/**
 * A pattern as Python's `fnmatch.fnmatchcase` reads it: `*` any run of characters (`/` included), `?` one, `[abc]`,
 * `[a-z]` and `[!abc]` a set; anything else literal. A pattern ending in `/` means everything under that dir, as
 * huggingface_hub adds `*` to it.
 */
const patternRegExp = (pattern: string): RegExp => {
  const text = pattern.endsWith('/') ? `${pattern}*` : pattern;
  let source = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '*') source += '[\\s\\S]*';
    else if (char === '?') source += '[\\s\\S]';
    else if (char === '[') {
      const close = text.indexOf(']', i + 2);
      if (close === -1) {
        source += '\\[';
        continue;
      }
      let set = text.slice(i + 1, close);
      const negated = set.startsWith('!');
      if (negated) set = set.slice(1);
      source += `[${negated ? '^' : ''}${set.replace(/\\/g, '\\\\').replace(/\^/g, '\\^')}]`;
      i = close;
    } else source += char.replace(special, '\\$&');
  }
  return new RegExp(`^${source}$`);
};

/** A test of paths against `selection`, its patterns compiled once. */
export const fileFilter = (selection: FileSelection | undefined): ((path: string) => boolean) => {
  if (selectsAll(selection)) return () => true;
  const allow = (selection?.allowPatterns ?? []).map(patternRegExp);
  const ignore = (selection?.ignorePatterns ?? []).map(patternRegExp);
  return (path) =>
    (allow.length === 0 || allow.some((re) => re.test(path))) && !ignore.some((re) => re.test(path));
};

/** The selection as one stable line (for a content identity and messages): `allow=[…] ignore=[…]`. */
export const selectionKey = (selection: FileSelection | undefined): string =>
  selectsAll(selection)
    ? ''
    : `allow=${JSON.stringify(selection?.allowPatterns ?? [])} ignore=${JSON.stringify(selection?.ignorePatterns ?? [])}`;
