/** The models.json format (KServe's, unchanged): io-ts codecs named like their types, so errors read as paths. */
import * as t from 'io-ts';
import { ModelName } from './model-name';
import { Quantity } from './quantity';

/** What to serve: where the model is stored, its framework and the memory it needs. */
export const ModelSpec = t.intersection(
  [
    t.type({ storageUri: t.string }, 'ModelSpec'),
    t.partial({ framework: t.string, memory: Quantity }, 'ModelSpec'),
  ],
  'ModelSpec',
);
export type ModelSpec = t.TypeOf<typeof ModelSpec>;
/** A ModelSpec as it appears in JSON. */
export type ModelSpecJson = t.OutputOf<typeof ModelSpec>;

/** One entry of models.json. */
export const ModelConfig = t.type({ modelName: ModelName, modelSpec: ModelSpec }, 'ModelConfig');
export type ModelConfig = t.TypeOf<typeof ModelConfig>;

/** The whole of models.json: a JSON array of ModelConfig (`[]` means no models). */
export const ModelConfigs = t.readonlyArray(ModelConfig, 'ModelConfigs');
export type ModelConfigs = t.TypeOf<typeof ModelConfigs>;
