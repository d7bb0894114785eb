/**
 * The file selection KServe hands its storage initializer: `STORAGE_ALLOW_PATTERNS` and `STORAGE_IGNORE_PATTERNS`,
 * read as `kserve_storage`'s `_parse_patterns_from_env` reads them (its LLMInferenceService controller sets the
 * first, a JSON array, on the tokenizer's init container).
 */
import { sequenceS } from 'fp-ts/Apply';
import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import type { Env } from './env';
import { patternListProblem, selectionOf, type FileSelection } from './file-selection';
import { parseJson } from './json/json';

/**
 * One variable's patterns: unset or blank is none; a JSON array of strings or a JSON string is its patterns; any
 * other text is split at commas. Each is trimmed and the empty ones dropped, as KServe does. Where KServe would
 * turn a JSON number, `null` or object into a pattern's text, this refuses the variable.
 */
const patternsOf = (env: Env, name: string): E.Either<string, ReadonlyArray<string>> => {
  const value = env[name]?.trim() ?? '';
  if (value === '') return E.right([]);
  const json = parseJson(value);
  let listed: ReadonlyArray<unknown>;
  if (E.isLeft(json)) listed = json.left._tag === 'Malformed' ? value.split(',') : [value];
  else listed = Array.isArray(json.right) ? json.right : [json.right];
  if (!listed.every((pattern): pattern is string => typeof pattern === 'string')) {
    return E.left(`${name}: expected a JSON array of strings, or patterns separated by commas`);
  }
  const patterns = listed.map((pattern) => pattern.trim()).filter((pattern) => pattern !== '');
  const problem = patternListProblem(patterns);
  return problem === undefined ? E.right(patterns) : E.left(`${name}: ${problem}`);
};

/** The selection of `env`, undefined when neither variable names a pattern; the Left names the variable that is wrong. */
export const selectionFromEnv = (env: Env): E.Either<string, FileSelection | undefined> =>
  pipe(
    sequenceS(E.Apply)({
      allow: patternsOf(env, 'STORAGE_ALLOW_PATTERNS'),
      ignore: patternsOf(env, 'STORAGE_IGNORE_PATTERNS'),
    }),
    E.map(({ allow, ignore }) => selectionOf(allow, ignore)),
  );
