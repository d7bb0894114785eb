/** The models.json format (KServe's, unchanged): io-ts codecs named like their types, so errors read as paths. */
import { isJsonObject } from './json/json-object';
import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import { maxPatternLength, maxPatterns, selectionOf, type FileSelection } from './file-selection';
import { ModelName } from './model-name';
import { previewValue } from './preview';
import type { JsonReviver } from './json/json';
import { Quantity, QuantityNumber } from './quantity';

/** What to serve: where the model is stored, which of its files, its framework and the memory it needs. */
export interface ModelSpec {
  readonly storageUri: string;
  readonly framework?: string;
  readonly memory?: Quantity;
  /** Only these files of the model are fetched (absent: all of them). */
  readonly selection?: FileSelection;
}
/** A ModelSpec as it appears in JSON. */
export interface ModelSpecJson {
  readonly storageUri: string;
  readonly framework?: string;
  readonly memory?: string;
  readonly allowPatterns?: ReadonlyArray<string>;
  readonly ignorePatterns?: ReadonlyArray<string>;
}

/**
 * A key as Go's `bytes.EqualFold` compares it, for the ASCII names of the fields here: letters regardless of case,
 * and the two other letters that fold to one of them (`ſ` to s; the Kelvin sign, which lower-cases to k).
 */
const foldKey = (key: string): string => key.toLowerCase().replaceAll('\u017f', 's');

/**
 * `record` with its keys spelt as `fields` spells them. KServe's agent decodes models.json with Go's decoder, which
 * takes a key for a field whatever its case (`storageURI`, the Go field's own name, is `storageUri`), so a config
 * KServe reads is read alike. Two spellings of one field in an object are refused as a duplicate key (Go takes the
 * last, as it does with an exact duplicate, which the parser refuses already). Most objects spell every field as
 * `fields` does: they are returned as they are, each key compared with `fields` and nothing more.
 */
export const withFieldKeys = (
  record: Readonly<Record<string, unknown>>,
  fields: ReadonlyArray<string>,
): E.Either<string, Readonly<Record<string, unknown>>> => {
  const keys = Object.keys(record);
  const fieldOf = (key: string): string | undefined =>
    fields.includes(key) ? key : fields.find((field) => foldKey(field) === foldKey(key));
  if (keys.every((key) => fields.includes(key) || fieldOf(key) === undefined)) return E.right(record);
  // The fields alone (the others are ignored anyway), in an object without a prototype: a key `__proto__` is data.
  const spelt: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  const spelling = new Map<string, string>();
  for (const key of keys) {
    const field = fieldOf(key);
    if (field === undefined) continue;
    const before = spelling.get(field);
    if (before !== undefined)
      return E.left(
        `duplicate key ${JSON.stringify(key)} (the key ${JSON.stringify(before)} in another case)`,
      );
    spelling.set(field, key);
    spelt[field] = record[key];
  }
  return E.right(spelt);
};

/**
 * JSON.parse's reviver for models.json: a number under a `memory` key (in any case, as withFieldKeys reads it) kept
 * as written, as Go's Quantity reads a number's raw bytes: `1e400` is a quantity, not Infinity.
 */
export const memoryNumbersAsText: JsonReviver = (key, value, context) =>
  typeof value === 'number' && context?.source !== undefined && foldKey(key) === 'memory'
    ? new QuantityNumber(context.source)
    : value;

/** The keys of an entry of models.json, and of its modelSpec, as withFieldKeys takes them. */
export const configFields = ['modelName', 'modelSpec'];
const specFields = ['storageUri', 'framework', 'memory', 'allowPatterns', 'ignorePatterns'];

/** `record[key]` through `codec`, its failures under the field's own context (so errors name the path). */
const field = <A>(
  codec: t.Decoder<unknown, A>,
  record: Readonly<Record<string, unknown>>,
  key: string,
  context: t.Context,
): t.Validation<A> => codec.validate(record[key], t.appendContext(context, key, codec, record[key]));

/**
 * A JSON `null` is an absent field, as Go's decoder (KServe's agent) reads one into a string or a Quantity: it
 * leaves the field unset. A tool that writes `"framework": null` writes a config KServe accepts.
 */
const absentIfNull = (value: unknown): unknown => (value === null ? undefined : value);

/** `field`, or nothing when the field is absent or null. */
const optional = <A>(
  ...[codec, record, key, context]: Parameters<typeof field<A>>
): t.Validation<A | undefined> =>
  absentIfNull(record[key]) === undefined ? t.success(undefined) : field(codec, record, key, context);

const failuresOf = (validations: ReadonlyArray<t.Validation<unknown>>): t.Errors =>
  validations.flatMap((v) => (v._tag === 'Left' ? v.left : []));

const specOf = (
  storageUri: string,
  framework: string | undefined,
  memory: Quantity | undefined,
  selection: FileSelection | undefined,
): ModelSpec => {
  const spec: { storageUri: string; framework?: string; memory?: Quantity; selection?: FileSelection } = {
    storageUri,
  };
  if (framework !== undefined) spec.framework = framework;
  if (memory !== undefined) spec.memory = memory;
  if (selection !== undefined) spec.selection = selection;
  return spec;
};

const isPattern = (u: unknown): u is string =>
  typeof u === 'string' && u.length > 0 && u.length <= maxPatternLength;

const isPatternList = (u: unknown): u is ReadonlyArray<string> =>
  Array.isArray(u) && u.length <= maxPatterns && u.every(isPattern);

/**
 * The longest storageUri or framework: more than any store takes in a URL or a path (object keys are at most 1,024
 * bytes, request lines about 8 KiB), while every log line of the model repeats its URI (a 10 MB one made 20 MB
 * lines, at each attempt) and its marker keeps both.
 */
export const maxSpecTextChars = 16_384;

const isSpecText = (u: unknown): u is string => typeof u === 'string' && u.length <= maxSpecTextChars;

/** A storageUri or a framework: a string of at most `maxSpecTextChars` characters. */
const SpecText = new t.Type<string, string, unknown>(
  'string',
  isSpecText,
  (u, context) =>
    isSpecText(u)
      ? t.success(u)
      : typeof u === 'string'
        ? t.failure(
            u,
            context,
            `expected a string of at most ${maxSpecTextChars} characters, got ${previewValue(u)}`,
          )
        : t.failure(u, context),
  t.identity,
);

/** One allow or ignore pattern: a non-empty string of at most `maxPatternLength` characters. */
const Pattern = new t.Type<string, string, unknown>(
  'Pattern',
  isPattern,
  (u, context) =>
    isPattern(u)
      ? t.success(u)
      : t.failure(
          u,
          context,
          typeof u === 'string'
            ? `expected a non-empty pattern of at most ${maxPatternLength} characters, got ${previewValue(u)}`
            : `expected a pattern (a string such as "*.json"), got ${previewValue(u)}`,
        ),
  t.identity,
);

/**
 * A list of patterns, at most `maxPatterns` of them. An array type, so that an element's error reads
 * `allowPatterns[2]`; like ModelSpec, the elements get contexts only when the list fails.
 */
const Patterns = new t.ReadonlyArrayType<
  typeof Pattern,
  ReadonlyArray<string>,
  ReadonlyArray<string>,
  unknown
>(
  'Patterns',
  isPatternList,
  (u, context) => {
    if (isPatternList(u)) return t.success(u);
    if (!Array.isArray(u)) {
      return t.failure(
        u,
        context,
        `expected an array of patterns such as ["*.json"], got ${previewValue(u)}`,
      );
    }
    if (u.length > maxPatterns)
      return t.failure(u, context, `expected at most ${maxPatterns} patterns, got ${u.length}`);
    return t.failures(
      failuresOf(
        u.map((pattern: unknown, i) =>
          Pattern.validate(pattern, t.appendContext(context, String(i), Pattern, pattern)),
        ),
      ),
    );
  },
  t.identity,
  Pattern,
);

/**
 * io-ts codec for ModelSpec. Written by hand rather than as `intersection([type, partial])`: it is decoded once
 * per model, and at 100k models the generic codecs' contexts, merging and intermediate results were most of the
 * decode time. A valid spec is checked with the fields' own `is` and nothing else; only an invalid one is
 * validated field by field, so that each error names its field. Unknown fields are dropped, as KServe ignores them.
 * `allowPatterns` and `ignorePatterns` are ours, named after KServe's initializer env vars (docs/storage.md,
 * "Choosing files"); KServe's agent ignores both.
 */
export const ModelSpec = new t.Type<ModelSpec, ModelSpecJson, unknown>(
  'ModelSpec',
  (u): u is ModelSpec => isJsonObject(u) && typeof u['storageUri'] === 'string',
  (value, context) => {
    if (!isJsonObject(value)) return t.failure(value, context);
    const spelt = withFieldKeys(value, specFields);
    if (E.isLeft(spelt)) return t.failure(value, context, spelt.left);
    const u = spelt.right;
    const { storageUri } = u;
    const framework = absentIfNull(u['framework']);
    const memory = absentIfNull(u['memory']);
    const allowPatterns = absentIfNull(u['allowPatterns']);
    const ignorePatterns = absentIfNull(u['ignorePatterns']);
    if (
      isSpecText(storageUri) &&
      (framework === undefined || isSpecText(framework)) &&
      (allowPatterns === undefined || isPatternList(allowPatterns)) &&
      (ignorePatterns === undefined || isPatternList(ignorePatterns))
    ) {
      const quantity = memory === undefined ? undefined : Quantity.validate(memory, context);
      if (quantity?._tag !== 'Left') {
        const selection = selectionOf(allowPatterns, ignorePatterns);
        return t.success(specOf(storageUri, framework, quantity?.right, selection));
      }
    }
    return t.failures(
      failuresOf([
        field(SpecText, u, 'storageUri', context),
        optional(SpecText, u, 'framework', context),
        optional(Quantity, u, 'memory', context),
        optional(Patterns, u, 'allowPatterns', context),
        optional(Patterns, u, 'ignorePatterns', context),
      ]),
    );
  },
  (spec) => ({
    storageUri: spec.storageUri,
    ...(spec.framework !== undefined ? { framework: spec.framework } : {}),
    ...(spec.memory !== undefined ? { memory: Quantity.encode(spec.memory) } : {}),
    ...selectionOf(spec.selection?.allowPatterns, spec.selection?.ignorePatterns),
  }),
);

/** One entry of models.json. */
export interface ModelConfig {
  readonly modelName: ModelName;
  readonly modelSpec: ModelSpec;
}
/** A ModelConfig as it appears in JSON. */
export interface ModelConfigJson {
  readonly modelName: string;
  readonly modelSpec: ModelSpecJson;
}

/** io-ts codec for one entry of models.json; by hand, like ModelSpec, because it runs once per model. */
export const ModelConfig = new t.Type<ModelConfig, ModelConfigJson, unknown>(
  'ModelConfig',
  (u): u is ModelConfig => isJsonObject(u) && ModelName.is(u['modelName']) && ModelSpec.is(u['modelSpec']),
  (value, context) => {
    if (!isJsonObject(value)) return t.failure(value, context);
    const spelt = withFieldKeys(value, configFields);
    if (E.isLeft(spelt)) return t.failure(value, context, spelt.left);
    const u = spelt.right;
    const { modelName } = u;
    // As in ModelSpec: contexts only for an entry that fails.
    const modelSpec = ModelSpec.validate(u['modelSpec'], context);
    if (ModelName.is(modelName) && modelSpec._tag === 'Right') {
      return t.success({ modelName, modelSpec: modelSpec.right });
    }
    return t.failures(
      failuresOf([field(ModelName, u, 'modelName', context), field(ModelSpec, u, 'modelSpec', context)]),
    );
  },
  (config) => ({ modelName: config.modelName, modelSpec: ModelSpec.encode(config.modelSpec) }),
);

/** The whole of models.json: a JSON array of ModelConfig (`[]` means no models). */
export const ModelConfigs = t.readonlyArray(ModelConfig, 'ModelConfigs');
export type ModelConfigs = t.TypeOf<typeof ModelConfigs>;
