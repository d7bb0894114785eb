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

const optional = <A>(
  codec: t.Decoder<unknown, A>,
  u: unknown,
  context: t.Context,
  key: string,
): t.Validation<A | undefined> =>
  u === undefined ? t.success(undefined) : codec.validate(u, t.appendContext(context, key, codec, u));

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
    const storageUri = t.string.validate(
      u['storageUri'],
      t.appendContext(context, 'storageUri', t.string, u['storageUri']),
    );
    const framework = optional(t.string, u['framework'], context, 'framework');
    const memory = optional(Quantity, u['memory'], context, 'memory');
    if (storageUri._tag === 'Left' || framework._tag === 'Left' || memory._tag === 'Left') {
      return t.failures([storageUri, framework, memory].flatMap((v) => (v._tag === 'Left' ? v.left : [])));
    }
    return t.success({
      storageUri: storageUri.right,
      ...(framework.right !== undefined ? { framework: framework.right } : {}),
      ...(memory.right !== undefined ? { memory: memory.right } : {}),
    });
  },
  (spec) => ({
    storageUri: spec.storageUri,
    ...(spec.framework !== undefined ? { framework: spec.framework } : {}),
    ...(spec.memory !== undefined ? { memory: Quantity.encode(spec.memory) } : {}),
  }),
);

/** One entry of models.json. */
export const ModelConfig = t.type({ modelName: ModelName, modelSpec: ModelSpec }, 'ModelConfig');
export type ModelConfig = t.TypeOf<typeof ModelConfig>;

/** The whole of models.json: a JSON array of ModelConfig (`[]` means no models). */
export const ModelConfigs = t.readonlyArray(ModelConfig, 'ModelConfigs');
export type ModelConfigs = t.TypeOf<typeof ModelConfigs>;
