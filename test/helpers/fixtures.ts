/** Test fixtures: specs, snapshots, models.json text and the phases a model goes through. */
import type { ModelSpec } from '../../src/core/model-config';
import type { ModelName } from '../../src/core/model-name';
import type { ModelPhase } from '../../src/core/model-status';
import { parseQuantity } from '../../src/core/quantity';
import type { Snapshot } from '../../src/core/snapshot';

export const name = (text: string): ModelName => text as ModelName;

export const spec = (storageUri: string, memory?: string, framework = 'sklearn'): ModelSpec => ({
  storageUri,
  framework,
  ...(memory !== undefined ? { memory: parseQuantity(memory)! } : {}),
});

export const snap = (models: Readonly<Record<string, ModelSpec>>): Snapshot =>
  new Map(Object.entries(models).map(([model, modelSpec]) => [name(model), modelSpec] as const));

/** models.json text for `models` (name → storageUri, or a full spec JSON object). */
export const modelsJson = (
  models: Readonly<Record<string, string | { storageUri: string; framework?: string; memory?: string }>>,
): string =>
  JSON.stringify(
    Object.entries(models).map(([modelName, value]) => ({
      modelName,
      modelSpec:
        typeof value === 'string' ? { storageUri: value, framework: 'sklearn', memory: '100Mi' } : value,
    })),
  );

/** The phases of an Add whose load is retried `retries` times before `outcome`: each retry is Retrying, Loading. */
export const phasesOfRetriedAdd = (retries: number, outcome: 'Loaded' | 'Failed'): ModelPhase[] => [
  'Downloading',
  'Loading',
  ...Array.from({ length: retries }, (): ModelPhase[] => ['Retrying', 'Loading']).flat(),
  outcome,
];
