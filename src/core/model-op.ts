/** ModelOp: what the loader must do to one model. Add is an upsert (new model or new spec); Remove drops it. */
import type { ModelName } from './model-name';
import type { ModelSpec, ModelSpecJson } from './model-config';
import { shownSpecJson, specToJson } from './snapshot';

export interface Add {
  readonly _tag: 'Add';
  readonly modelName: ModelName;
  readonly spec: ModelSpec;
  /** True for the ops of the first accepted config: readiness waits for exactly these. */
  readonly onStartup: boolean;
}
export interface Remove {
  readonly _tag: 'Remove';
  readonly modelName: ModelName;
}
export type ModelOp = Add | Remove;

export const add = (modelName: ModelName, spec: ModelSpec, onStartup = false): Add => ({
  _tag: 'Add',
  modelName,
  spec,
  onStartup,
});
export const remove = (modelName: ModelName): Remove => ({ _tag: 'Remove', modelName });

/** The JSON line form of an op, as `modelsync --dry-run` prints it (KServe's field names). */
export type ModelOpJson =
  | { op: 'Add'; modelName: string; modelSpec: ModelSpecJson; onStartup: boolean }
  | { op: 'Remove'; modelName: string };

export const modelOpToJson = (op: ModelOp): ModelOpJson =>
  op._tag === 'Add'
    ? { op: 'Add', modelName: op.modelName, modelSpec: specToJson(op.spec), onStartup: op.onStartup }
    : { op: 'Remove', modelName: op.modelName };

/**
 * The line `--dry-run` prints for `op`: modelOpToJson with the storage URI without user info, query and fragment
 * (redactUri), as /status and the log show it; the text's redaction alone missed a query after a space in the path.
 */
export const shownModelOpJson = (op: ModelOp): ModelOpJson =>
  op._tag === 'Add'
    ? { op: 'Add', modelName: op.modelName, modelSpec: shownSpecJson(op.spec), onStartup: op.onStartup }
    : modelOpToJson(op);
