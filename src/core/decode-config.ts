/** decodeConfig: the text of models.json to a Snapshot, or a ConfigError naming the file and each bad field. */
import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import { errorMessage, invalidConfig, invalidJson, type ConfigError } from './errors';
import { parseJson, previewJson, withCountOfMore } from './json/json';
import { previewValue } from './preview';
import { isJsonObject } from './json/json-object';
import {
  configFields,
  memoryNumbersAsText,
  ModelConfig,
  ModelConfigs,
  withFieldKeys,
  type ModelSpec,
} from './model-config';
import type { ModelName } from './model-name';
import type { Snapshot } from './snapshot';

const maxErrorsListed = 10;

const tagOf = (type: t.Decoder<unknown, unknown>): string => (type as { _tag?: string })._tag ?? '';
// Keys under intersections, unions and refinements are codec plumbing, not fields of the document.
const plumbing = new Set(['IntersectionType', 'UnionType', 'RefinementType']);
const arrays = new Set(['ArrayType', 'ReadonlyArrayType']);

/** `[2].modelSpec.memory`: the path of a validation error, as a reader of models.json would write it. */
const pathOf = (context: t.Context): string =>
  context
    .slice(1)
    .map((entry, i) => ({ entry, parent: context[i]! }))
    .filter(({ parent }) => !plumbing.has(tagOf(parent.type)))
    .map(({ entry, parent }) =>
      arrays.has(tagOf(parent.type)) ? `[${entry.key}]` : `.${previewKey(entry.key)}`,
    )
    .join('')
    .replace(/^\./, '') || '(document)';

const previewKey = (key: string): string => (key.length > 40 ? `${key.slice(0, 37)}...` : key);

const formatError = (error: t.ValidationError): string => {
  const last = error.context[error.context.length - 1];
  const expected = last?.type.name ?? 'a value';
  if (error.message !== undefined) return `${pathOf(error.context)}: ${error.message}`;
  return error.value === undefined
    ? `${pathOf(error.context)}: is missing (expected ${expected})`
    : `${pathOf(error.context)}: expected ${expected}, got ${previewValue(error.value)}`;
};

/** Distinct problem lines, at most `maxErrorsListed` of them, and a count of all (a config may have a million). */
class Problems {
  private readonly listed = new Set<string>();
  private more = 0;
  get count(): number {
    return this.listed.size + this.more;
  }
  /** Adds the line `line()` makes; once `maxErrorsListed` are listed, further problems are only counted. */
  add(line: () => string): void {
    if (this.listed.size < maxErrorsListed) this.listed.add(line());
    else this.more++;
  }
  addErrors(errors: t.Errors): void {
    errors.forEach((error) => this.add(() => formatError(error)));
  }
  lines(): ReadonlyArray<string> {
    return withCountOfMore([...this.listed], this.count);
  }
}

/** One line per failing field, at most `maxErrorsListed` of them; bad values are shown in at most 80 characters. */
export const formatValidationErrors = (errors: t.Errors): ReadonlyArray<string> => {
  const problems = new Problems();
  problems.addErrors(errors);
  return problems.lines();
};

/** The index of the first entry naming `name`, its key spelt in any case (see withFieldKeys). */
const firstIndexOf = (entries: ReadonlyArray<unknown>, name: ModelName): number =>
  entries.findIndex((entry) => {
    const fields = isJsonObject(entry) ? withFieldKeys(entry, configFields) : undefined;
    return fields !== undefined && E.isRight(fields) && fields.right['modelName'] === name;
  });

/** Each entry through ModelConfig, into a snapshot; a name listed twice is a problem, naming both positions. */
const decodeEntries = (file: string, document: unknown): E.Either<ConfigError, Snapshot> => {
  const root: t.Context = [{ key: '', type: ModelConfigs, actual: document }];
  if (!Array.isArray(document)) {
    return E.left(invalidConfig(file, formatValidationErrors([{ value: document, context: root }])));
  }
  const entries = document as ReadonlyArray<unknown>;
  const snapshot = new Map<ModelName, ModelSpec>();
  const problems = new Problems();
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index];
    // Like `field` in model-config.ts: the entry's own context only when it fails.
    let config = ModelConfig.validate(entry, root);
    if (config._tag === 'Left')
      config = ModelConfig.validate(entry, t.appendContext(root, String(index), ModelConfig, entry));
    if (config._tag === 'Left') {
      problems.addErrors(config.left);
    } else {
      const { modelName, modelSpec } = config.right;
      const size = snapshot.size;
      // Set, then see whether the name was new: one hash lookup per model. A repeat rejects the whole config.
      snapshot.set(modelName, modelSpec);
      if (snapshot.size === size) {
        // Only a listed line searches for the first position: a million copies of one name stay linear.
        problems.add(
          () =>
            `[${index}].modelName: ${previewValue(modelName)} is already listed at [${firstIndexOf(entries, modelName)}]`,
        );
      }
    }
  }
  return problems.count > 0 ? E.left(invalidConfig(file, problems.lines())) : E.right(snapshot);
};

const decode = (file: string, text: string): E.Either<ConfigError, Snapshot> => {
  const json = parseJson(text, memoryNumbersAsText);
  if (E.isLeft(json)) {
    return E.left(
      json.left._tag === 'Structure'
        ? invalidConfig(file, withCountOfMore(json.left.problems, json.left.count))
        : invalidJson(file, json.left._tag === 'Blank' ? 'the file is empty' : json.left.reason),
    );
  }
  return decodeEntries(file, json.right);
};

/**
 * Decodes models.json (`file` is only used to name it in errors). All or nothing: one bad entry rejects it.
 * Total: whatever the text, the answer is a Snapshot or a ConfigError, never a throw. A throw from in here would
 * be a bug, and it becomes a ConfigError too: the pipeline keeps the last good config instead of dying with it.
 */
export const decodeConfig = (file: string, text: string): E.Either<ConfigError, Snapshot> => {
  try {
    return decode(file, text);
  } catch (cause) {
    return E.left(
      invalidConfig(file, [
        `could not be checked (a modelsync bug): ${previewJson(errorMessage(cause), 200)}`,
      ]),
    );
  }
};
