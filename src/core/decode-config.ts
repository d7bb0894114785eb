/** decodeConfig: the text of models.json to a Snapshot, or a ConfigError naming the file and each bad field. */
import { either as E } from 'fp-ts';
import type * as t from 'io-ts';
import { invalidConfig, invalidJson, type ConfigError } from './errors';
import { parseJson } from './json';
import { ModelConfigs } from './model-config';
import type { ModelName } from './model-name';
import type { ModelSpec } from './model-config';
import type { Snapshot } from './snapshot';

const maxErrorsListed = 10;

// Keys under intersections and unions are codec plumbing, not fields of the document.
const isFieldContainer = (type: t.Decoder<unknown, unknown>): boolean => {
  const tag = (type as { _tag?: string })._tag;
  return tag !== 'IntersectionType' && tag !== 'UnionType' && tag !== 'RefinementType';
};

const isArrayType = (type: t.Decoder<unknown, unknown>): boolean => {
  const tag = (type as { _tag?: string })._tag;
  return tag === 'ArrayType' || tag === 'ReadonlyArrayType';
};

/** `[2].modelSpec.memory`: the path of a validation error, as a reader of models.json would write it. */
const pathOf = (context: t.Context): string =>
  context
    .slice(1)
    .map((entry, i) => ({ entry, parent: context[i]! }))
    .filter(({ parent }) => isFieldContainer(parent.type))
    .map(({ entry, parent }) => (isArrayType(parent.type) ? `[${entry.key}]` : `.${entry.key}`))
    .join('')
    .replace(/^\./, '') || '(document)';

const show = (value: unknown): string => {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
};

/** One line per failing field, at most `maxErrorsListed` of them. */
export const formatValidationErrors = (errors: t.Errors): ReadonlyArray<string> => {
  const lines = [
    ...new Set(
      errors.map((error) => {
        const last = error.context[error.context.length - 1];
        const expected =
          error.message ?? `expected ${last?.type.name ?? 'a value'}, got ${show(error.value)}`;
        return `${pathOf(error.context)}: ${error.value === undefined && error.message === undefined ? `is missing (expected ${last?.type.name ?? 'a value'})` : expected}`;
      }),
    ),
  ];
  return lines.length > maxErrorsListed
    ? [...lines.slice(0, maxErrorsListed), `and ${lines.length - maxErrorsListed} more`]
    : lines;
};

const toSnapshot = (file: string, configs: ModelConfigs): E.Either<ConfigError, Snapshot> => {
  const snapshot = new Map<ModelName, ModelSpec>();
  const duplicates: string[] = [];
  configs.forEach(({ modelName, modelSpec }, index) => {
    if (snapshot.has(modelName)) {
      const first = configs.findIndex((config) => config.modelName === modelName);
      duplicates.push(`[${index}].modelName: ${JSON.stringify(modelName)} is already listed at [${first}]`);
    } else {
      snapshot.set(modelName, modelSpec);
    }
  });
  return duplicates.length > 0 ? E.left(invalidConfig(file, duplicates)) : E.right(snapshot);
};

/** Decodes models.json (`file` is only used to name it in errors). All or nothing: one bad entry rejects it. */
export const decodeConfig = (file: string, text: string): E.Either<ConfigError, Snapshot> => {
  const json = parseJson(text);
  if (E.isLeft(json)) {
    return E.left(invalidJson(file, json.left._tag === 'Blank' ? 'the file is empty' : json.left.reason));
  }
  const configs = ModelConfigs.decode(json.right);
  if (E.isLeft(configs)) return E.left(invalidConfig(file, formatValidationErrors(configs.left)));
  return toSnapshot(file, configs.right);
};
