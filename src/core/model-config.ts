/** The models.json format (KServe's, unchanged): io-ts codecs named like their types, so errors read as paths. */
import * as t from 'io-ts';
import { ModelName } from './model-name';
import { Quantity } from './quantity';

/** What to serve: where the model is stored, its framework and the memory it needs. */
export interface ModelSpec {
  readonly storageUri: string;
  readonly framework?: string;
  readonly memory?: Quantity;
}
/** A ModelSpec as it appears in JSON. */
export interface ModelSpecJson {
  readonly storageUri: string;
  readonly framework?: string;
  readonly memory?: string;
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

/**
 * `record[key]` through `codec`. The happy path builds no io-ts context (at 100k models they were a large part of
 * the decode time); only a failure is validated again with the field's context, so its error names the path.
 */
const field = <A>(
  codec: t.Decoder<unknown, A>,
  record: Readonly<Record<string, unknown>>,
  key: string,
  context: t.Context,
): t.Validation<A> => {
  const value = record[key];
  const result = codec.validate(value, context);
  return result._tag === 'Right'
    ? result
    : codec.validate(value, t.appendContext(context, key, codec, value));
};

const optional = <A>(
  codec: t.Decoder<unknown, A>,
  record: Readonly<Record<string, unknown>>,
  key: string,
  context: t.Context,
): t.Validation<A | undefined> =>
  record[key] === undefined ? t.success(undefined) : field(codec, record, key, context);

const failuresOf = (validations: ReadonlyArray<t.Validation<unknown>>): t.Errors =>
  validations.flatMap((v) => (v._tag === 'Left' ? v.left : []));

/**
 * io-ts codec for ModelSpec. Written by hand rather than as `intersection([type, partial])`: it is decoded once
 * per model, and at 100k models the generic intersection's merging was a third of the decode time. Unknown fields
 * are dropped, as KServe ignores them.
 */
export const ModelSpec = new t.Type<ModelSpec, ModelSpecJson, unknown>(
  'ModelSpec',
  (u): u is ModelSpec => isRecord(u) && typeof u['storageUri'] === 'string',
  (u, context) => {
    if (!isRecord(u)) return t.failure(u, context);
    const storageUri = field(t.string, u, 'storageUri', context);
    const framework = optional(t.string, u, 'framework', context);
    const memory = optional(Quantity, u, 'memory', context);
    if (storageUri._tag === 'Left' || framework._tag === 'Left' || memory._tag === 'Left') {
      return t.failures(failuresOf([storageUri, framework, memory]));
    }
    const spec: { storageUri: string; framework?: string; memory?: Quantity } = {
      storageUri: storageUri.right,
    };
    if (framework.right !== undefined) spec.framework = framework.right;
    if (memory.right !== undefined) spec.memory = memory.right;
    return t.success(spec);
  },
  (spec) => ({
    storageUri: spec.storageUri,
    ...(spec.framework !== undefined ? { framework: spec.framework } : {}),
    ...(spec.memory !== undefined ? { memory: Quantity.encode(spec.memory) } : {}),
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
  (u): u is ModelConfig => isRecord(u) && ModelName.is(u['modelName']) && ModelSpec.is(u['modelSpec']),
  (u, context) => {
    if (!isRecord(u)) return t.failure(u, context);
    const modelName = field(ModelName, u, 'modelName', context);
    const modelSpec = field(ModelSpec, u, 'modelSpec', context);
    if (modelName._tag === 'Left' || modelSpec._tag === 'Left') {
      return t.failures(failuresOf([modelName, modelSpec]));
    }
    return t.success({ modelName: modelName.right, modelSpec: modelSpec.right });
  },
  (config) => ({ modelName: config.modelName, modelSpec: ModelSpec.encode(config.modelSpec) }),
);

/** The whole of models.json: a JSON array of ModelConfig (`[]` means no models). */
export const ModelConfigs = t.readonlyArray(ModelConfig, 'ModelConfigs');
export type ModelConfigs = t.TypeOf<typeof ModelConfigs>;
